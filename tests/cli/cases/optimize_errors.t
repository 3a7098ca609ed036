## optimize errors: bad input exits 1, bad flags 2; nothing is written either way.
$ tapestry optimize $TESTDATA/graphs/mlp.json --target nope -o plan.json
! error: unknown target "nope": not a built-in (local, 2x-h100x8, a100x8, cpu-2, h100x8, h200x8) and no such file
[exit 1]
$ tapestry optimize missing.json --target h100x8 -o plan.json
! missing.json: error: cannot open file: No such file or directory
[exit 1]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --iterations 2 --memory-cap 1KiB -o plan.json --front front.json
! error: no plan on the front fits under 1KiB (the smallest needs 472.2KiB)
[exit 1]
$ tapestry optimize $TESTDATA/graphs/transformer_block.json --target h100x8 --exhaustive -o plan.json
! error: --exhaustive: transformer_block has 3.27e+54 plans for 8 devices, each with and without inputs forwarded (21 operations, 160 to 736 choices each), more than the 1000000 it enumerates; drop --exhaustive to search it stochastically
[exit 1]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --iterations 2 -o no/such/dir/plan.json --front front.json
! no/such/dir/plan.json: error: cannot write output file: No such file or directory
[exit 1]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --iterations 2 -o plan.json --front no/such/dir/front.json
! no/such/dir/front.json: error: cannot write output file: No such file or directory
[exit 1]
$ mkdir out && tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --iterations 2 -o out
! out: error: cannot write output file: is a directory
[exit 1]
[created out]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --select time
! tapestry: error: --select time needs --memory-cap (the fastest plan under that cap)
[exit 2]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --memory-cap 40Gb
! tapestry: error: --memory-cap: bad size "40Gb": expected a number followed by B, KB, MB, GB, TB, KiB, MiB, GiB or TiB
[exit 2]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target h100x8 --exhaustive --iterations 3
! tapestry: error: --exhaustive evaluates every plan; it takes no --iterations or --budget-seconds
[exit 2]
$ tapestry optimize $TESTDATA/graphs/mlp.json --target nope --format json
{
  "status": "error",
  "exit_code": 1,
  "error": {
    "message": "unknown target \"nope\": not a built-in (local, 2x-h100x8, a100x8, cpu-2, h100x8, h200x8) and no such file"
  }
}
! error: unknown target "nope": not a built-in (local, 2x-h100x8, a100x8, cpu-2, h100x8, h200x8) and no such file
[exit 1]
$ printf 'name: tiny-gpus\ndevices: {count: 8, kind: gpu, memory: 300KiB, memory_bandwidth: 1TB/s, flops: {float32: 10T}, launch_overhead: 4us}\nlinks: {bandwidth: 100GB/s, latency: 2us}\nhost: {bandwidth: 10GB/s, latency: 10us}\n' > t.yaml && tapestry optimize $TESTDATA/graphs/mlp.json --target t.yaml --iterations 3 -o plan.json
! error: no plan of mlp fits in the memory of tiny-gpus's devices (300KiB each); the smallest plan found needs 472.2KiB
[exit 1]
[created t.yaml]
