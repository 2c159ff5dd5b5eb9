"""research/benchmarks/bf16_devices.py end to end on the CPU: the shipped shapes on random weights,
fp32 and bf16 side by side on real WNUT-17 lines, one row per device and a finite ratio."""

import re

import bf16_devices  # research/benchmarks/bf16_devices.py (setup.cfg: pytest pythonpath)
import torch


def test_prints_fp32_and_bf16_words_per_second_and_their_ratio(wnut17_dir, capsys):
    threads = torch.get_num_threads()
    bf16_devices.main(["--data", str(wnut17_dir / "dev.conll"), "--docs", "8", "--repeats", "1", "--gpu-id", "-1"])
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if "cpu, 1 thread" in line]
    assert re.search(r"amx_bf16: (yes|no|\?)", row)
    assert float(re.search(r"([0-9.]+)x\s*$", row).group(1)) > 0
    assert "8 docs" in out and torch.get_num_threads() == threads  # the caller's threads come back


def test_without_data_it_times_the_built_in_sample_lines():
    texts = bf16_devices.texts_of(5, None)
    assert len(texts) == 5 and all(words and len(words) == len(spaces) for words, spaces in texts)
