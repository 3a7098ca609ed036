## run executes a plan shard by shard: devices become worker threads, transfers
## copy regions, reductions combine partials (SPEC §9). --check also runs the
## unsharded graph (in float64, and in the plan's dtypes) and compares every
## output; the errors' digits vary with the machine's BLAS, and times, sizes and
## worker counts with the machine, so they are masked. -q prints nothing. A graph runs as the single-device plan on the
## local target. --outputs writes NAME.npy per graph output; they can feed
## another run as --inputs (a generator graph makes mm_relu's x and w).
## --format json prints one summary document on stdout.
$ cd $TESTDATA && tapestry run plans/mm_relu_2dev.json --check 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
check y (float32): max error E, unsharded E, bound B ok
$ cd $TESTDATA && tapestry run plans/convnet_2dev.json --check 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
check logits (float32): max error E, unsharded E, bound B ok
check probs (float32): max error E, unsharded E, bound B ok
$ cd $TESTDATA && tapestry run plans/mobilenet_block_2dev.json --check 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
check logits (float32): max error E, unsharded E, bound B ok
check picked (float32): max error E, unsharded E, bound B ok
$ cd $TESTDATA && tapestry run plans/mlp_2dev.json --check 2>&1 | sed -E 's/[0-9.]+(us|ms|s)\b/T/g; s/ [0-9.]+(B|KiB|MiB|GiB)/ M/g; s/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/; s/[0-9]+ worker threads?/W workers/'
ran plans/mlp_2dev.json (graph mlp): 12 shards, 24 transfers, 0 reduction steps on 2 devices (W workers, cpu): T (predicted T)
memory: peak per device M (predicted M), inputs M, outputs M
check probs (float32): max error E, unsharded E, bound B ok
$ cd $TESTDATA && tapestry run plans/mlp_2dev.json --check --threads 1 -q
$ cd $TESTDATA && tapestry run graphs/tiny.json --check 2>&1 | grep -o '^ran .*devices\?\|^check.*ok$' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
ran graphs/tiny.json (graph tiny): 4 shards, 7 transfers, 0 reduction steps on 1 device
check p (float32): max error E, unsharded E, bound B ok
$ cd $TESTDATA && tapestry run graphs/concat_split_embedding.json --check --seed 5 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
check to_bf16.result (bfloat16): max error E, unsharded E, bound B ok
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json --outputs out -q && ls out
y.npy
[created out]
$ echo '{"tapestry": "graph/v1", "name": "gen", "tensors": {"a": {"dtype": "float32", "shape": [8, 4]}, "b": {"dtype": "float32", "shape": [4, 6]}}, "operations": [{"name": "p", "kernel": "neg", "inputs": {"input": "a"}, "outputs": {"result": "x"}}, {"name": "q", "kernel": "relu", "inputs": {"input": "b"}, "outputs": {"result": "w"}}]}' > gen.json && tapestry run gen.json --outputs in -q && ls in && tapestry run $TESTDATA/plans/mm_relu_2dev.json --inputs in --check 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
w.npy
x.npy
check y (float32): max error E, unsharded E, bound B ok
[created gen.json]
[created in]
$ tapestry --format json run $TESTDATA/plans/mm_relu_2dev.json --check | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["graph"], d["devices"], d["shards"], d["transfers"], d["reduction_steps"], d["check"]["ok"], [(o["tensor"], o["precision"], list(o), o["max_error"] <= o["bound"]) for o in d["check"]["outputs"]]); print(list(d)); print(list(d["memory"])); m=d["memory"]; print(all(a <= b for a, b in zip(m["peak_bytes_per_device"], m["predicted_peak_bytes_per_device"])))'
ok mm_relu 2 6 8 2 True [('y', 'float32', ['tensor', 'dtype', 'precision', 'max_error', 'unsharded_error', 'bound', 'ok'], True)]
['status', 'plan', 'graph', 'backend', 'devices', 'devices_used', 'workers', 'blas_threads', 'shards', 'transfers', 'reduction_steps', 'channels_last_regions', 'wall_time_s', 'predicted_time_s', 'memory', 'outputs', 'check']
['peak_bytes_per_device', 'predicted_peak_bytes_per_device', 'input_bytes', 'output_bytes', 'transfer_bytes', 'assembled_bytes', 'max_rss_bytes']
True
## where with a bool condition (PyTorch's masked_fill exported as ONNX Where) on
## a 2-device plan: the mask drawn from the seed, then read from a .npy file
## laid out as NumPy writes bool arrays ('|b1', one byte per element): a causal mask.
$ echo '{"tapestry": "graph/v1", "name": "masked", "tensors": {"mask": {"dtype": "bool", "shape": [8, 16]}, "scores": {"dtype": "float32", "shape": [2, 8, 16]}, "fill": {"dtype": "float32", "shape": [1]}}, "operations": [{"name": "w", "kernel": "where", "inputs": {"condition": "mask", "X": "scores", "Y": "fill"}, "outputs": {"result": "masked"}}, {"name": "s", "kernel": "softmax", "inputs": {"input": "masked"}, "outputs": {"result": "probs"}}]}' > masked.json && tapestry optimize masked.json --target cpu-2 --seed 1 --iterations 200 -q -o mplan.json && python3 -c 'import json; p = json.load(open("mplan.json")); print(sorted({s["device"] for o in p["operations"].values() for s in o["shards"]}))' && tapestry run mplan.json --check --seed 3 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
[0, 1]
check probs (float32): max error E, unsharded E, bound B ok
[created masked.json]
[created mplan.json]
$ echo '{"tapestry": "graph/v1", "name": "gen", "tensors": {"a": {"dtype": "float32", "shape": [2, 8, 16]}, "b": {"dtype": "float32", "shape": [1]}}, "operations": [{"name": "p", "kernel": "neg", "inputs": {"input": "a"}, "outputs": {"result": "scores"}}, {"name": "q", "kernel": "neg", "inputs": {"input": "b"}, "outputs": {"result": "fill"}}]}' > mgen.json && tapestry run mgen.json --outputs min -q && python3 -c 'h = "{\"descr\": \"|b1\", \"fortran_order\": False, \"shape\": (8, 16), }"; h = h + " " * (117 - len(h)) + "\n"; open("min/mask.npy", "wb").write(b"\x93NUMPY\x01\x00" + bytes([len(h), 0]) + h.encode() + bytes([int(i % 16 <= i // 16) for i in range(128)]))' && ls min && tapestry run mplan.json --inputs min --check 2>&1 | grep '^check' | sed -E 's/max error [^,]+, unsharded [^,]+, bound [^ ]+/max error E, unsharded E, bound B/'
fill.npy
mask.npy
scores.npy
check probs (float32): max error E, unsharded E, bound B ok
[created mgen.json]
[created min]
## A bool output (the nonzero pattern of an int tensor) is checked exactly and
## written as NumPy writes bool arrays: descr '|b1', one byte (0 or 1) per element.
$ echo '{"tapestry": "graph/v1", "name": "nz", "tensors": {"n": {"dtype": "int32", "shape": [2, 3]}}, "operations": [{"name": "c", "kernel": "cast", "params": {"dtype": "bool"}, "inputs": {"input": "n"}, "outputs": {"result": "nz"}}]}' > nz.json && tapestry run nz.json --outputs bout --check --seed 4 2>&1 | grep '^check' && python3 -c 'd = open("bout/nz.npy", "rb").read(); print(d[10:d.index(b"}") + 1].decode(), len(d) - 128, set(d[-6:]) <= {0, 1})'
check nz (bool): max error 0, unsharded 0, bound 0 ok
{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), } 6 True
[created bout]
[created nz.json]
