// Seed 001 (Distributed graph partition): LeNet5 on MNIST padded to 32x32, trained on one
// device (the seed's reference run: test accuracy 0.9889 after 10 epochs) or data-parallel on
// N in-process devices.
//
//   build/bin/sample-lenet5-mnist --data ../shared/datasets/mnist [--epochs N | --steps N]
//                                 [--devices 1] [--limit N]
//
// The seed (MindSpore):
//   net = LeNet()            # conv1, conv2 (no bias), fc1, fc2, fc3; TruncatedNormal(0.02)
//   opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
//   model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean'), opt,
//                 metrics={"Accuracy": Accuracy()})
//   model.train(10, ds_train, callbacks=[LossMonitor(), TimeMonitor()])
// and then cuts the same network across 5 workers:
//   self.fc1.place("MS_WORKER", 0)
//   self.fc2.place("MS_WORKER", 1)
//   self.fc3.place("MS_WORKER", 2)
//   self.conv1.place("MS_WORKER", 3)
//   self.conv2.place("MS_WORKER", 4)
//
// The placed run (place(), 5 workers joined by send/receive) is the model file
// samples/models/lenet5_place.yaml: `shardscope train samples/models/lenet5_place.yaml
// --micro-batches 4`. This program, like the shared sample runner, drives the SPMD trainer and
// trains the unplaced network.
#include "models.h"
#include "sample_runner.h"

using namespace shardscope;

int main(int argc, char** argv) {
  samples::LeNet5 net;  // unplaced (see above)

  samples::SampleSpec spec;
  spec.description =
      "Seed 001: LeNet5 on MNIST, one device or data-parallel on N in-process devices";
  spec.headline = "seed 001: LeNet5";
  spec.note =
      "the placed run is samples/models/lenet5_place.yaml (shardscope train); this program trains "
      "the unplaced network";
  spec.devices = 1;
  spec.devices_help = "In-process devices (data-parallel when more than 1)";
  spec.mnist_data.images.pad_to = 32;  // the seed resizes 28x28 to 32x32
  spec.input_shape = {1, 32, 32};
  spec.config = {.seed = 1,
                 .optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f}};
  spec.epoch_times = true;
  return samples::RunSample(argc, argv, net, spec);
}
