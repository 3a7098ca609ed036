## tapestry optimize: the plan goes to -o (stdout by default), the front to --front;
## with -o FILE a summary goes to stdout (--format json: a JSON document), with the
## plan on stdout the text summary goes to stderr (-q: none). Fixed --seed and
## --iterations make the result reproducible; "seconds" is filtered out.
## The same seed gives the same plan and front whatever the thread count.
## The plan on stdout, the summary on stderr.
## Exhaustive: every plan of a small graph, the true front.
## --memory-cap keeps the selection under the cap; --select time needs one.
## --baseline writes a baseline's plan instead of the selected one (bench/cost_truth.py compares them).
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --seed 1 --iterations 5 -o plan.json --front front.json --format json | grep -v '"seconds"'
{
  "status": "ok",
  "graph": "mlp",
  "target": "h100x8",
  "devices": 8,
  "calibrated": false,
  "front_size": 29,
  "rewrites": [
    {
      "rule": "linear_relu",
      "replaced": [
        "fc1",
        "relu1"
      ],
      "added": [
        "fc1+relu1"
      ]
    },
    {
      "rule": "linear_relu",
      "replaced": [
        "fc2",
        "relu2"
      ],
      "added": [
        "fc2+relu2"
      ]
    }
  ],
  "rewrite_search": {
    "rules": [],
    "site_groups": [],
    "graphs": 1,
    "written_sites": 2
  },
  "selected": {
    "index": 0,
    "policy": "fastest",
    "objectives": {
      "time_s": 4.6848530366350084e-05,
      "peak_memory_bytes": 1480744,
      "transfer_bytes": 8016192,
      "feasible": true
    },
    "busiest": {
      "device": {
        "index": 0,
        "busy_s": 1.6449635820895535e-05,
        "share": 0.3511238387258103,
        "shards": 4
      },
      "link": {
        "from": "host",
        "to": 1,
        "busy_s": 2.4596654545454546e-05,
        "share": 0.5250251043759869,
        "transfers": 1,
        "bytes": 802816
      }
    }
  },
  "baselines": {
    "single": {
      "time_s": 0.00012064266963364994,
      "peak_memory_bytes": 2463744,
      "transfer_bytes": 2343976,
      "feasible": true
    },
    "data_parallel": {
      "time_s": 6.631168499321575e-05,
      "peak_memory_bytes": 2184744,
      "transfer_bytes": 17346880,
      "feasible": true
    },
    "tensor_parallel": {
      "time_s": 8.65561124559023e-05,
      "peak_memory_bytes": 598272,
      "transfer_bytes": 5127208,
      "feasible": true
    }
  },
  "sharding_pays": true,
  "written": "selected",
  "search": {
    "method": "stochastic",
    "seed": 1,
    "iterations": 5,
    "evaluations": 326,
    "invalid": 0,
    "threads": 1,
  },
  "output": "plan.json",
  "front": "front.json"
}
[created front.json]
[created plan.json]
$ python3 -c 'import json; p = json.load(open("plan.json")); print(p["tapestry"], p["graph"]["name"], p["target"]["name"], sorted(p["objectives"]))'
plan/v1 mlp h100x8 ['feasible', 'peak_memory_bytes', 'peak_memory_per_device', 'time_s', 'transfer_bytes']
$ python3 -c 'import json; f = json.load(open("front.json")); print(f["tapestry"], len(f["front"]) > 1, f["selected"], sorted(f["baselines"]), sorted(f["front"][0]["operations"]["fc1+relu1"]), f["search"]["iterations"])'
front/v1 True 0 ['data_parallel', 'single', 'tensor_parallel'] ['devices', 'split'] 5
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --seed 3 --iterations 4 --threads 1 -q -o p1.json --front f1.json && tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --seed 3 --iterations 4 --threads 2 -q -o p2.json --front f2.json && cmp p1.json p2.json && diff <(grep -v -e '"seconds"' -e '"threads"' f1.json) <(grep -v -e '"seconds"' -e '"threads"' f2.json) && echo same
same
[created f1.json]
[created f2.json]
[created p1.json]
[created p2.json]
$ tapestry optimize $TESTDATA/graphs/tiny.json --target cpu-2 --iterations 2 --select smallest | python3 -c 'import json, sys; p = json.load(sys.stdin); print(p["tapestry"], list(p["operations"]))'
plan/v1 ['norm_in', 'fc', 'norm_out', 'probs']
! tiny on cpu-2 (2 devices): 13 plans on the front after 2 iterations (128 plans)
!   selected (smallest) 88.02us, peak 145.2KiB, moved 278.5KiB
!   busiest             device 0 busy 86% of the time (4 shards); link host -> 0 busy 19% (7 transfers, 99.25KiB)
!   single              140.3us, peak 259.5KiB, moved 195.5KiB
!   data_parallel       85.32us, peak 194KiB, moved 327KiB
!   tensor_parallel     108.5us, peak 195.2KiB, moved 275.5KiB
$ tapestry optimize $TESTDATA/graphs/tiny.json --target cpu-2 --iterations 2 -q | sed -n 1,3p; echo
{
  "tapestry": "plan/v1",
  "graph": {

$ tapestry optimize $TESTDATA/graphs/tiny.json --target cpu-2 --exhaustive -o plan.json
tiny on cpu-2 (2 devices): 13 plans on the front (exhaustive, 387 plans)
  selected (fastest)  85.32us, peak 194KiB, moved 327KiB
  busiest             device 0 busy 88% of the time (4 shards); link host -> 0 busy 28% (7 transfers, 163.5KiB)
  single              140.3us, peak 259.5KiB, moved 195.5KiB
  data_parallel       85.32us, peak 194KiB, moved 327KiB
  tensor_parallel     108.5us, peak 195.2KiB, moved 275.5KiB
  -> plan.json
$ tapestry optimize $TESTDATA/expanded/mlp.expanded.json --target cpu-2 --iterations 3 --select knee -o plan.json --inputs-on free -q && python3 -c 'import json; print(json.load(open("plan.json"))["options"])'
{'inputs_on': 'free'}
$ echo '{"tapestry": "graph/v1", "name": "served", "tensors": {"x": {"dtype": "float32", "shape": [64, 32]}, "w": {"dtype": "float32", "shape": [32, 32], "constant": true}}, "operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}], "outputs": ["y"]}' > served.json
[created served.json]
$ tapestry optimize served.json --target cpu-2 --iterations 2 --baseline data_parallel --inputs-on constants -o p.json -q && python3 -c 'import json; p = json.load(open("p.json")); print(p["options"], sorted(t["tensor"] for t in p["transfers"] if t["from"] == "host"))'
{'inputs_on': 'constants'} ['x', 'x']
[created p.json]
$ tapestry run p.json --check -q; echo $?
0
$ tapestry optimize served.json --target cpu-2 --iterations 2 --baseline data_parallel -o p.json -q && python3 -c 'import json; p = json.load(open("p.json")); print(p["options"], sorted(t["tensor"] for t in p["transfers"] if t["from"] == "host"))'
{'inputs_on': 'host'} ['w', 'w', 'x', 'x']
$ tapestry optimize served.json --target cpu-2 --inputs-on cloud
! tapestry: error: --inputs-on: cloud not in {host,free,constants}
[exit 2]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --seed 1 --iterations 5 --select time --memory-cap 600KiB -o plan.json --format json | python3 -c 'import json, sys; s = json.load(sys.stdin)["selected"]; print(s["policy"], s["objectives"]["peak_memory_bytes"] <= 600 * 1024)'
time True
$ tapestry optimize $TESTDATA/graphs/mlp.json --target cpu-2 --iterations 2 --baseline data_parallel -o p.json | tail -2
  written: the data_parallel baseline, not the selected plan
  -> p.json
$ python3 -c 'import json; p = json.load(open("p.json")); print([o["split"] for o in p["operations"].values()])'
[[2, 1], [2, 1], [2, 1], [2]]
$ echo '{"tapestry": "graph/v1", "name": "act", "tensors": {"x": {"dtype": "float32", "shape": [8, 4]}}, "operations": [{"name": "r", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "y"}}], "outputs": ["y"]}' | tapestry optimize - --target cpu-2 --iterations 2 --baseline tensor_parallel -o p.json
! error: --baseline tensor_parallel: act has no tensor_parallel baseline (tensor_parallel needs a linear or matmul)
[exit 1]
$ tapestry optimize $TESTDATA/graphs/mlp.json --baseline model_parallel
! tapestry: error: --baseline: model_parallel not in {single,data_parallel,tensor_parallel}
[exit 2]
