#!/usr/bin/env bash
# tests/bench/cuda_path.sh: bench/run.py's GPU path, which only a GPU machine runs for real,
# taken end to end here so that a lent GPU's minutes are not spent on a broken script: a
# stand-in fusec that runs `--target=cuda` on the CPU backend, and stand-in PyTorch peers
# (bench/torch_peers.py's output format, from --list-workloads, with its systems and bytes for
# each kind, so that a kind added there is covered here). Checks that every workload has
# fusec, --no-fuse and the peers' rows, that torch's copy_ can set the copy limit, that the
# launch overhead (plan against stream) and compile latency are recorded, and the plots.
# Skipped (77) without the CPU backend.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
"$FUSEC" --target=cpu "$FUSEC_SRC/examples/gelu.fuse" >/dev/null 2>&1 || {
    echo "no CPU backend"
    exit 77
}
cat >"$tmp/fusec" <<EOF
#!/usr/bin/env bash
args=()
for a in "\$@"; do
    case "\$a" in
    --target=cuda) args+=(--target=cpu) ;;
    --arch=*) ;;
    *) args+=("\$a") ;;
    esac
done
exec "$FUSEC" "\${args[@]}"
EOF
chmod +x "$tmp/fusec"
run="$FUSEC_SRC/bench/run.py"
python3 "$run" --list-workloads --quick --target cuda >"$tmp/workloads.json"
check "run.py lists the GPU workloads" test -s "$tmp/workloads.json"
# the peers: a copy_ ten times faster than anything, so that it sets the copy limit; each
# kind's systems (no "torch fused op" where PyTorch has none) and bytes as torch_peers.py has them
python3 - "$tmp/workloads.json" "$tmp/peers.json" "$FUSEC_SRC/bench" <<'EOF'
import json, sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, sys.argv[3])
import torch_peers as tp
times = {"torch eager": 1.0, "torch fused op": 0.2, "torch.compile": 0.15, "torch copy_": 1e-4}
res = []
for w in json.load(open(sys.argv[1])):
    kind, dtype, shape = tp.check_workload(w)
    for system in tp.systems(kind):
        r = dict(kind=kind, dtype=dtype, shape=list(shape), system=system,
                 bytes=tp.moved_bytes(kind, dtype, shape), median_ms=times[system])
        if system == "torch.compile":
            r["compile_s"] = 3.0
        res.append(r)
peers = {"torch": "stand-in", "cuda": "13.0", "device_kind": "cuda", "device": "stand-in",
         "reps": 20, "warmup": 3, "compile": True}
json.dump({"peers": peers, "results": res}, open(sys.argv[2], "w"))
EOF
python3 "$run" --fusec "$tmp/fusec" --target cuda --quick --reps 3 --peers "$tmp/peers.json" \
    --out "$tmp/out" >"$tmp/log" 2>&1
rc=$?
check "run.py --target cuda exits 0 (exit $rc): $(tail -5 "$tmp/log")" test "$rc" -eq 0
check "results.json holds the GPU run" python3 - "$tmp/out/results.json" "$tmp/workloads.json" \
    "$FUSEC_SRC/bench" <<'EOF'
import json, sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, sys.argv[3])
import torch_peers as tp
out = json.load(open(sys.argv[1]))
wls = json.load(open(sys.argv[2]))
run, = out["runs"]
assert run["device"]["target"] == "cuda", run["device"]
assert run["torch"]["device"] == "stand-in", run.get("torch")
lat = run["compile_latency"]
assert all(lat.get(k) for k in ("process_cold_ms", "process_cached_ms", "inprocess_cold_ms")), lat
lo = run["launch_overhead"]
assert set(lo) == {"plan", "stream"}, lo
assert all(v["kernels"] >= 20 and v["host_us_per_kernel"] > 0 for v in lo.values()), lo
for w in wls:
    rows = [r for r in out["results"] if r["workload"] == w["kind"] and r["dtype"] == w["dtype"]
            and list(r["dims"].values()) == w["shape"]]
    systems = {r["system"] for r in rows}
    want = {"fusec", "fusec --no-fuse"} | set(tp.systems(w["kind"])) - {"torch copy_"}
    assert want <= systems, (w, systems)
    for r in rows:
        # the limit is the fastest copy measured: torch's copy_ here
        assert r["copy_gbps"] == max(r["copies_gbps"].values()), r
        assert "torch copy_" in r["copies_gbps"], r
        assert abs(r["pct_of_copy"] - 100 * r["gbps"] / r["copy_gbps"]) < 1e-6, r
        if r["system"] == "torch.compile":
            assert r["compile_s"] == 3.0, r
        if r["system"].startswith("fusec"):
            assert r["kernels"] >= 1, r
EOF
if python3 -c "import matplotlib" 2>/dev/null; then
    n=$(ls "$tmp/out"/cuda_*.png 2>/dev/null | wc -l)
    want=$(python3 -c 'import json, sys
print(len({(w["kind"], w["dtype"]) for w in json.load(open(sys.argv[1]))}))' "$tmp/workloads.json")
    check "a plot for each GPU workload and dtype (found $n of $want)" test "$n" -eq "$want"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
