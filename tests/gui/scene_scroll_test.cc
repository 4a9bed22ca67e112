// The scroll area around a SceneWidget (stepper, device matrix, tensor map) follows the picture
// shown: after a tall frame, a short one fits again without a scrollbar. Qt Test, offscreen.
#include <QScrollArea>
#include <QScrollBar>
#include <QTest>

#include "scene_widget.h"
#include "shardscope/viewer/scene.h"

namespace viewer = shardscope::viewer;
using shardscope::gui::InScrollArea;
using shardscope::gui::SceneWidget;

namespace {

viewer::Scene Picture(double w, double h) {
  viewer::Scene scene;
  scene.items.push_back(viewer::BoxItem(QRectF(0, 0, w, h), Qt::gray, "frame"));
  scene.bounds = QRectF(0, 0, w, h);
  return scene;
}

// Lets the scroll area settle (layout requests are posted events).
void Settle() {
  for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
}

}  // namespace

class SceneScrollTest : public QObject {
  Q_OBJECT

 private slots:
  // A frame taller than the room scrolls down but fits the room's width (no horizontal bar);
  // the next frame is sized to the room as if no scrollbar had been shown: when it fits, no
  // scrollbar is left, and the widget is no larger than the room.
  void heightFollowsTheFrame() {
    QWidget window;
    window.resize(720, 320);
    auto* view = new SceneWidget;
    QScrollArea* area = InScrollArea(view, &window);
    area->setGeometry(0, 0, 720, 320);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QSizeF tall(1000, 2000);
    for (const QSizeF size : {QSizeF(1000, 300), QSizeF(600, 200), QSizeF(1000, 420),
                              QSizeF(600, 420), QSizeF(900, 2400)}) {
      view->SetScene(Picture(tall.width(), tall.height()));
      Settle();
      QVERIFY(area->verticalScrollBar()->isVisible());
      QVERIFY2(!area->horizontalScrollBar()->isVisible(),
               qPrintable(QString("tall frame: widget %1 wide, room %2")
                              .arg(view->width())
                              .arg(area->viewport()->width())));
      view->SetScene(Picture(size.width(), size.height()));
      Settle();
      const QString where = QString("%1 x %2 after %3 x %4: widget %5 x %6, room %7 x %8")
                                .arg(size.width())
                                .arg(size.height())
                                .arg(tall.width())
                                .arg(tall.height())
                                .arg(view->width())
                                .arg(view->height())
                                .arg(area->viewport()->width())
                                .arg(area->viewport()->height());
      QVERIFY2(!area->horizontalScrollBar()->isVisible(), qPrintable(where));
      QVERIFY2(view->width() <= area->viewport()->width(), qPrintable(where));
      // Scrolls down only when the frame is taller than the room at a readable scale (of the
      // sizes above, only 900 x 2400 is).
      const bool taller = size.height() > 1000;
      QCOMPARE(area->verticalScrollBar()->isVisible(), taller);
      if (!taller) QVERIFY2(view->height() <= area->viewport()->height(), qPrintable(where));
    }
  }
};

QTEST_MAIN(SceneScrollTest)
#include "scene_scroll_test.moc"
