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
  // A tall frame scrolls; the next, shorter frame fits: no vertical scrollbar, and the
  // widget is no taller than the room.
  void heightFollowsTheFrame() {
    QWidget window;
    window.resize(720, 320);
    auto* view = new SceneWidget;
    QScrollArea* area = InScrollArea(view, &window);
    area->setGeometry(0, 0, 720, 320);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    view->SetScene(Picture(600, 2000));
    Settle();
    QVERIFY(area->verticalScrollBar()->isVisible());
    for (const QSizeF size : {QSizeF(600, 200), QSizeF(900, 280), QSizeF(600, 420)}) {
      view->SetScene(Picture(600, 2000));
      Settle();
      view->SetScene(Picture(size.width(), size.height()));
      Settle();
      const QString where = QString("%1 x %2 after 600 x 2000: widget %3 x %4, room %5 x %6")
                                .arg(size.width())
                                .arg(size.height())
                                .arg(view->width())
                                .arg(view->height())
                                .arg(area->viewport()->width())
                                .arg(area->viewport()->height());
      QVERIFY2(!area->verticalScrollBar()->isVisible(), qPrintable(where));
      QVERIFY2(view->height() <= area->viewport()->height(), qPrintable(where));
    }
  }
};

QTEST_MAIN(SceneScrollTest)
#include "scene_scroll_test.moc"
