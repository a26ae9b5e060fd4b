"""The openvsl Python package as a notebook user meets it: a short modelled
run, a 4-run sweep (local pool, and on a local Ray cluster), determinism,
and errors as one-line exceptions."""

import json
import os
import sys

import pandas as pd
import pytest

import openvsl

QUICK = dict(scale=0.01, duration="2s", interval="500ms", profile="4k-randwrite", precondition=True)
COLUMNS = [
    "t_s", "ios", "iops", "read_iops", "write_iops", "mb_per_s", "lat_avg_us", "lat_max_us",
    "lat_stddev_us", "lat_p50_us", "lat_p95_us", "lat_p99_us", "lat_p999_us", "lat_p9999_us",
    "write_amplification", "gc_pages_moved",
]
PLAN = dict(QUICK, format=["stock", "hp"], seed=[1, 2])


def test_run_returns_summary_and_intervals_frame():
    summary, df = openvsl.run(format="hp", seed=3, **QUICK)
    assert list(df.columns) == COLUMNS
    assert len(df) == 4
    assert df["t_s"].tolist() == [0.5, 1.0, 1.5, 2.0]
    assert summary["iops"] > 0 and summary["writes"] > 0 and summary["reads"] == 0
    assert (df["write_amplification"] >= 1.0).all()


def test_same_seed_same_frame_other_seed_other_frame():
    a = openvsl.run(seed=7, **QUICK)
    b = openvsl.run(seed=7, **QUICK)
    c = openvsl.run(seed=8, **QUICK)
    pd.testing.assert_frame_equal(a[1], b[1])
    assert a[0] == b[0]
    assert not a[1].equals(c[1])


def test_fio_style_options_and_listings():
    summary, df = openvsl.run(rw="randrw", rwmixread=70, bssplit="4k/50:64k/50",
                              scale=0.01, duration="1s", interval="1s", threads=4, qd=8)
    assert 0.6 < summary["read_iops"] / summary["iops"] < 0.8
    assert "4k-randwrite" in openvsl.profiles()
    assert "iodrive-duo-640-mlc" in [d["name"] for d in openvsl.devices()]


def test_gc_policies_listed_and_selectable():
    names = list(openvsl.policies())
    assert names == ["greedy", "cost-benefit", "d-choices:D", "fifo", "windowed:W"]
    assert all(source for _, source in openvsl.policies().values())
    greedy, _ = openvsl.run(seed=4, **QUICK)
    d1, _ = openvsl.run(seed=4, gc_policy="d-choices:2", **QUICK)
    d2, _ = openvsl.run(seed=4, gc_policy="d-choices:2", **QUICK)
    assert d1 == d2
    assert d1["gc_pages_moved"] != greedy["gc_pages_moved"]


def test_placements_listed_and_selectable():
    assert list(openvsl.placements()) == ["single", "hot-cold", "streams"]
    assert all(source for _, source in openvsl.placements().values())
    skewed = dict(QUICK, random_distribution="zoned:90/10:10/90", seed=4)
    single, _ = openvsl.run(**skewed)
    hot_cold, _ = openvsl.run(placement="hot-cold", **skewed)
    # The hot tenth of the card (6.4 GB at scale 0.01) as its own stream.
    streams, _ = openvsl.run(placement="streams", stream=["0-640M"], **skewed)
    assert openvsl.run(placement="hot-cold", **skewed)[0] == hot_cold
    moved = {s["gc_pages_moved"] for s in (single, hot_cold, streams)}
    assert len(moved) == 3, "the placement changes nothing"


@pytest.mark.parametrize("kwargs, message", [
    (dict(colour="red"), "unexpected argument '--colour' found"),
    (dict(gc_policy="d-choices:0"), "d-choices:0"),
    (dict(gc_policy="windowed:0"), "windowed:0"),
    (dict(gc_policy="lru"), "unknown GC policy 'lru'"),
    (dict(placement="lukewarm"), "unknown placement"),
    (dict(placement="streams", stream=["0-2G", "1G-3G"]), "overlap"),
    (dict(placement="streams", stream=["0-100T"]), "beyond the card"),
    (dict(profile="nope"), "unknown profile 'nope'"),
    (dict(duration="soon"), "--duration"),
    (dict(device="floppy"), "floppy"),
])
def test_errors_are_one_line_exceptions(kwargs, message):
    with pytest.raises(openvsl.OpenvslError) as e:
        openvsl.run(**kwargs)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def _sweep_files(out):
    runs = os.path.join(out, "runs")
    return {n: open(os.path.join(runs, n)).read() for n in sorted(os.listdir(runs))}


def test_four_run_sweep_frame_resume_and_match_with_run(tmp_path):
    out = tmp_path / "sweep"
    df = openvsl.sweep(PLAN, out=out, workers=2)
    assert len(df) == 4
    assert {"key", "format", "seed", "iops", "steady_iops", "steady_write_amplification"} <= set(df.columns)
    assert sorted(zip(df["format"], df["seed"])) == [("hp", 1), ("hp", 2), ("stock", 1), ("stock", 2)]
    assert (out / "index.html").exists()
    files = _sweep_files(out)
    # Resumed: nothing runs again, the same files and table come back.
    df2 = openvsl.sweep(PLAN, out=out, workers=2)
    pd.testing.assert_frame_equal(df, df2)
    assert _sweep_files(out) == files
    # A sweep's run is the same as openvsl.run with those options.
    row = df[(df["format"] == "hp") & (df["seed"] == 2)].iloc[0]
    summary, intervals = openvsl.run(format="hp", seed=2, **QUICK)
    assert row["iops"] == summary["iops"]
    stored = json.loads(files[row["key"] + ".json"])
    pd.testing.assert_frame_equal(pd.DataFrame(stored["intervals"]), intervals)


def test_sweep_bad_plans_keep_finished_results(tmp_path):
    out = tmp_path / "sweep"
    openvsl.sweep(QUICK, out=out)
    kept = _sweep_files(out)
    for plan, message in [
        (dict(QUICK, colour="red"), "unknown key 'colour'"),
        (dict(QUICK, format=[]), "'format' is an empty list"),
        (dict(QUICK, gc_policy=["greedy", "lru"]), "unknown GC policy 'lru'"),
        (dict(QUICK, gc_policy="d-choices:0"), "d-choices:0"),
        (dict(QUICK, placement="lukewarm"), "unknown placement"),
        (dict(QUICK, placement="streams", stream="0-100T"), "beyond the card"),
        (dict(QUICK, placement="streams", stream="0-2G,1G-3G"), "overlap"),
    ]:
        with pytest.raises(openvsl.OpenvslError, match=message):
            openvsl.sweep(plan, out=out)
        assert _sweep_files(out) == kept
    with pytest.raises(openvsl.OpenvslError, match="cannot read sweep plan"):
        openvsl.sweep(tmp_path / "missing.toml", out=out)


def _ray_or_skip():
    try:
        import ray  # noqa: F401
    except ImportError:
        print("\n*** SKIPPED: Ray is not installed, the Ray sweep test did not run ***", file=sys.stderr)
        pytest.skip("Ray is not installed")
    return ray


def test_ray_sweep_matches_the_local_pool(tmp_path):
    ray = _ray_or_skip()
    local = openvsl.sweep(PLAN, out=tmp_path / "local", workers=2)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        on_ray = openvsl.sweep(PLAN, out=tmp_path / "ray", engine="ray", address=None)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(local, on_ray)
    assert _sweep_files(tmp_path / "local") == _sweep_files(tmp_path / "ray")


def test_unreachable_ray_address_is_one_line(tmp_path):
    _ray_or_skip()
    with pytest.raises(openvsl.OpenvslError) as e:
        openvsl.sweep(PLAN, out=tmp_path / "ray", engine="ray", address="ray://127.0.0.1:1")
    assert "cannot reach the Ray cluster at ray://127.0.0.1:1" in str(e.value)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "ray" / "runs").exists()


def _vsl_or_skip():
    vsl = os.environ.get("VSL_BIN")
    if not vsl or not os.path.exists(vsl):
        why = f"VSL_BIN={vsl} is not a file" if vsl else "VSL_BIN is not set"
        print(f"\n*** SKIPPED: {why} (python/run_tests.sh sets it to the cargo tests' vsl) ***", file=sys.stderr)
        pytest.skip(why)
    return vsl


def _vsl_sweep(vsl, plan, out, *extra):
    import subprocess

    return subprocess.run([vsl, "sweep", str(plan), "--out", str(out), "--python", sys.executable, *extra],
                          capture_output=True, text=True, timeout=600)


def test_vsl_sweep_engine_ray_matches_local_and_unreachable_is_one_line(tmp_path):
    vsl = _vsl_or_skip()
    _ray_or_skip()
    plan = tmp_path / "plan.toml"
    plan.write_text('scale = 0.01\nduration = "2s"\ninterval = "500ms"\nprofile = "4k-randwrite"\n'
                    'precondition = true\nformat = ["stock", "hp"]\nseed = [1, 2]\n')
    local = _vsl_sweep(vsl, plan, tmp_path / "local", "-q")
    assert local.returncode == 0, local.stderr
    bad = _vsl_sweep(vsl, plan, tmp_path / "ray", "--engine", "ray", "--address", "ray://127.0.0.1:1", "-q")
    assert bad.returncode == 1
    assert bad.stderr.startswith("vsl: error: cannot reach the Ray cluster at ray://127.0.0.1:1")
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    ray = _vsl_sweep(vsl, plan, tmp_path / "ray", "--engine", "ray", "--address", "local", "-q")
    assert ray.returncode == 0, ray.stderr
    assert _sweep_files(tmp_path / "local") == _sweep_files(tmp_path / "ray")
    assert (tmp_path / "local" / "results.csv").read_text() == (tmp_path / "ray" / "results.csv").read_text()
