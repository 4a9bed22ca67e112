// Start here. Shardscope's whole public C++ API in one include (link shardscope_api).
//
// Foundations
//   status.h         Status / Result<T>: how every call reports failure
//   checked_math.h   element, byte and memory counts checked within 63 bits
//   rng.h            the seeded, portable random generator
//   tensor.h         Tensor, Shape, DType
// Models and one device
//   ops.h            the operator vocabulary (OpKind) and attributes
//   graph.h          the graph IR: values, nodes, verifier, text/DOT dumps
//   builder.h        appending operators under name scopes
//   composites.h     operators made of others (batch-norm training)
//   nn.h             modules mirroring the seeds: Dense, Conv2d, ReLU, Sequential, ...
//   model_file.h     model files (YAML): network, training and parallel configuration
//   onnx_import.h    .onnx files as forward graphs
//   autodiff.h       the backward graph as ordinary operators
//   executor.h       running a graph on one device
//   initializer.h    seeded parameter initialisation
//   optimizer.h      SGD, Momentum, Adam
//   trainer.h        single-device training loop pieces
//   data.h           MNIST / Fashion-MNIST IDX loader, synthetic data, batches
// Distribution
//   layout/          device meshes (mesh.h), tensor layouts and their notations (layout.h)
//   sharding_rule.h  how each operator's dimensions may be split
//   strategy.h       per-operator strategies (seed notation) and what they resolve to
//   cost/            the cost model and calibration measurements (cost.h)
//   redistribution/  planning a layout change: steps, bytes, bound, executor (redistribution.h)
//   search.h         strategy searches over the forward graph
//   partition.h      the SPMD passes: one program that every rank runs
//   program_price.h  the predicted step time of a partitioned program
//   communicator.h   ranks talking: in-process threads or OpenMPI
//   dist_trainer.h   running and training a partitioned program on one rank
//   checkpoint.h     global parameters and optimizer state saved, verified and restored
//   placement.h      the training graph cut into one program per worker (MPMD)
//   pipeline.h       training a placed model with micro-batch pipelining
//   recorder.h       what a run decided and measured, written to a run file
#pragma once

#include "shardscope/autodiff.h"
#include "shardscope/builder.h"
#include "shardscope/checked_math.h"
#include "shardscope/checkpoint.h"
#include "shardscope/communicator.h"
#include "shardscope/composites.h"
#include "shardscope/cost/cost.h"
#include "shardscope/data.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/executor.h"
#include "shardscope/graph.h"
#include "shardscope/initializer.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/model_file.h"
#include "shardscope/nn.h"
#include "shardscope/onnx_import.h"
#include "shardscope/ops.h"
#include "shardscope/optimizer.h"
#include "shardscope/partition.h"
#include "shardscope/pipeline.h"
#include "shardscope/placement.h"
#include "shardscope/program_price.h"
#include "shardscope/recorder.h"
#include "shardscope/redistribution/redistribution.h"
#include "shardscope/rng.h"
#include "shardscope/search.h"
#include "shardscope/sharding_rule.h"
#include "shardscope/status.h"
#include "shardscope/strategy.h"
#include "shardscope/tensor.h"
#include "shardscope/trainer.h"
