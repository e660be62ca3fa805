"""bench/int8.py (xweave int8 vs onnxruntime int8 vs xweave float32) in its smoke mode:
every runner is timed and xweave's int8 outputs are onnxruntime's exact ones."""

import pytest

from helpers import load_bench

int8 = load_bench("int8")


def test_smoke_mode_times_every_runner_on_tiny_models(monkeypatch):
    monkeypatch.setattr(int8, "set_threads", lambda threads: None)  # keep this process's pools
    records = int8.main(["--smoke"])
    assert [r["model"] for r in records] == ["resnet50", "bert_encoder"]
    for record in records:
        assert all(record[f"{k}_ms"] > 0 for k in int8.RUNNERS)
        assert record["cpu"] and record["vs_ort_int8"] > 0
    resnet, bert = records
    # the CNN's output is dequantized: compared in steps of its quantization
    assert resnet["vs_exact"] == {"diff_steps": 0.0, "diff_fraction": 0.0}
    # BERT's is float (LayerNorm): the integer matmuls agree, the float ops to rounding
    assert bert["vs_exact"]["max_rel_err"] < 1e-4


def test_unknown_models_are_refused():
    with pytest.raises(SystemExit):
        int8.main(["--models", "resnet51"])
