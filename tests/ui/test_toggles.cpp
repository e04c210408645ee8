// The toggles panel built from a knobs JSON: one editor per knob of the right kind, disabled knobs carry the
// engine's reason, user edits emit knobChanged and programmatic updates do not.
#include <QCheckBox>
#include <QComboBox>
#include <QStandardItemModel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include "ui/knob_spec.h"
#include "ui/toggles_panel.h"

using namespace tb::ui;

class TestToggles : public QObject {
  Q_OBJECT
  const QByteArray json_ = R"({"knobs":[
    {"id":"workers","title":"Loader workers","type":"int","default":0,"recommended":4,"min":0,"max":16,"value":0,
     "applicable":true},
    {"id":"pin_memory","title":"Pinned memory","type":"bool","default":"off","recommended":"on","value":false,
     "applicable":false,"reason":"no CUDA device in this process"},
    {"id":"amp","title":"Mixed precision","type":"enum","default":"off","recommended":"fp16","choices":["off","fp16","bf16"],
     "value":"off","applicable":true,"changes_numerics":true,"unavailable_values":["fp16"],
     "reason":"fp16 is not available here"},
    {"id":"cudnn_benchmark","title":"cuDNN autotuner","type":"bool","default":"off","value":true,"applicable":true},
    {"title":"no id: skipped"}]})";

 private slots:
  void parsesKnobs() {
    const auto parsed = parseKnobsJson(json_);
    QVERIFY(parsed.ok());
    const auto& k = *parsed;
    QCOMPARE(int(k.size()), 4);
    QCOMPARE(k[0].type, KnobSpec::Type::Int);
    QCOMPARE(k[0].max, 16);
    QCOMPARE(k[1].value, QString("off"));  // JSON false -> "off"
    QCOMPARE(k[3].value, QString("on"));
    QVERIFY(!k[1].applicable);
    QCOMPARE(k[2].choices, QStringList({"off", "fp16", "bf16"}));
  }
  void badJsonGivesOneLineError() {
    const auto bad = parseKnobsJson("{\"knobs\": [");
    QVERIFY(!bad);
    QVERIFY(!bad.error().message.empty());
    QVERIFY(bad.error().message.find('\n') == std::string::npos);
    const auto none = parseKnobsJson("{\"x\": 1}");
    QVERIFY(!none);
    QVERIFY(none.error().message.find("knob") != std::string::npos);
  }
  void buildsEditorsAndDisablesWithReason() {
    TogglesPanel p;
    p.setKnobs(parseKnobsJson(json_).value());
    auto* workers = qobject_cast<QSpinBox*>(p.editorFor("workers"));
    auto* pin = qobject_cast<QCheckBox*>(p.editorFor("pin_memory"));
    auto* amp = qobject_cast<QComboBox*>(p.editorFor("amp"));
    auto* cudnn = qobject_cast<QCheckBox*>(p.editorFor("cudnn_benchmark"));
    QVERIFY(workers && pin && amp && cudnn);
    QCOMPARE(workers->maximum(), 16);
    QVERIFY(workers->isEnabled());
    QVERIFY(!pin->isEnabled());
    QVERIFY2(pin->toolTip().contains("no CUDA device in this process"), qPrintable(pin->toolTip()));
    QVERIFY(amp->toolTip().contains("loss-drift"));
    QVERIFY(cudnn->isChecked());
    QCOMPARE(amp->count(), 3);
    // fp16 is listed but cannot be picked here; bf16 can.
    auto* model = qobject_cast<QStandardItemModel*>(amp->model());
    QVERIFY(model);
    QVERIFY(!model->item(amp->findText("fp16"))->isEnabled());
    QVERIFY(model->item(amp->findText("bf16"))->isEnabled());
    QCOMPARE(model->item(amp->findText("fp16"))->toolTip(), QString("fp16 is not available here"));
  }
  void userEditsEmitProgrammaticDoNot() {
    TogglesPanel p;
    p.setKnobs(parseKnobsJson(json_).value());
    QSignalSpy spy(&p, &TogglesPanel::knobChanged);
    p.setValues({{"workers", "4"}, {"amp", "fp16"}, {"cudnn_benchmark", "off"}});
    QCOMPARE(spy.count(), 0);
    QCOMPARE(p.value("workers"), QString("4"));
    QCOMPARE(p.value("amp"), QString("fp16"));
    QCOMPARE(p.value("cudnn_benchmark"), QString("off"));
    qobject_cast<QCheckBox*>(p.editorFor("cudnn_benchmark"))->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QString("cudnn_benchmark"));
    QCOMPARE(spy.at(0).at(1).toString(), QString("on"));
    qobject_cast<QSpinBox*>(p.editorFor("workers"))->setValue(8);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.at(1).at(1).toString(), QString("8"));
  }
};

QTEST_MAIN(TestToggles)
#include "test_toggles.moc"
