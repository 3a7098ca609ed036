## run's errors: exit 1 for bad inputs and plans, 3 when --check finds a
## mismatch (a generator graph writes NaN, 0/0, into mm_relu's x: NaN never
## passes), 4 when the backend cannot run here ("built without the CUDA
## backend" or "no CUDA GPU found (...)" depending on the build and the
## machine), 2 for bad flags.
$ echo '{"tapestry": "graph/v1", "name": "gen", "tensors": {"a": {"dtype": "float32", "shape": [8, 4]}, "w": {"dtype": "float32", "shape": [4, 6]}}, "operations": [{"name": "z", "kernel": "sub", "inputs": {"A": "a", "B": "a"}, "outputs": {"result": "zero"}}, {"name": "d", "kernel": "div", "inputs": {"A": "zero", "B": "zero"}, "outputs": {"result": "x"}}], "outputs": ["x", "w"]}' > gen.json && tapestry run gen.json --outputs in -q && cd $TESTDATA && tapestry run plans/mm_relu_2dev.json --inputs "$OLDPWD/in" --check 2>&1 | grep -v '^ran\|^memory'
check y (float32): max error nan, unsharded nan, bound 4.8e-07 MISMATCH
plans/mm_relu_2dev.json: error: run --check: output y differs from the unsharded graph: max error nan, unsharded nan, bound 4.8e-07
[exit 3]
[created gen.json]
[created in]
$ echo '{"tapestry": "graph/v1", "name": "gen", "tensors": {"a": {"dtype": "float32", "shape": [8, 5]}, "b": {"dtype": "float32", "shape": [4, 6]}}, "operations": [{"name": "p", "kernel": "neg", "inputs": {"input": "a"}, "outputs": {"result": "x"}}, {"name": "q", "kernel": "relu", "inputs": {"input": "b"}, "outputs": {"result": "w"}}]}' > gen.json && tapestry run gen.json --outputs in -q && tapestry run $TESTDATA/plans/mm_relu_2dev.json --inputs in
! in/x.npy: error: x.npy has shape (8, 5) but the graph declares x as [8, 4]
[exit 1]
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json --inputs nowhere
! nowhere/x.npy: error: missing input x: cannot open file: No such file or directory
[exit 1]
$ tapestry run missing.json
! missing.json: error: cannot open file: No such file or directory
[exit 1]
$ cd $TESTDATA && tapestry run bad/plans/selection.json
! bad/plans/selection.json:109:46: error: at /operations/mm/shards/1/selections/inputs/W/0/range: selection zr[2:3, 0:6] does not match the IPF projection zr[2:4, 0:6]
!               "W": [{"tensor": "w", "range": {"start": [2, 0], "end": [3, 6]}}]
!                                              ^
[exit 1]
$ echo '{"tapestry": "front/v1"}' > f.json && tapestry run f.json
! f.json:1:14: error: at /tapestry: unknown format "front/v1" (expected "plan/v1", "graph/v1" or "expanded/v1")
! {"tapestry": "front/v1"}
!              ^
[exit 1]
[created f.json]
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json --backend cuda 2>&1 | sed -E 's/error: (tapestry was built without the CUDA backend|no CUDA GPU found.*|the CUDA backend cannot execute plans yet.*)/error: CUDA backend unavailable/'
error: CUDA backend unavailable
[exit 4]
$ tapestry --format json run $TESTDATA/plans/mm_relu_2dev.json --backend cuda 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["exit_code"])'
error 4
[exit 4]
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json --threads -1
! tapestry: error: --threads: Value -1 not in range 0 to 4096
[exit 2]
