## Bad command lines exit 2 with one line on stderr and no usage dump.
$ tapestry
! tapestry: error: no command given (expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate); run 'tapestry --help' for usage
[exit 2]
$ tapestry frobnicate
! tapestry: error: unknown command "frobnicate"; expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate
[exit 2]
$ tapestry expand
! tapestry: error: GRAPH is required
[exit 2]
$ tapestry --format yaml --version
! tapestry: error: --format: yaml not in {text,json}
[exit 2]
$ tapestry optimize g.json --select bogus
! tapestry: error: --select: bogus not in {fastest,smallest,knee,time}
[exit 2]
$ tapestry optimize g.json --threads 0
! tapestry: error: --threads: Value 0 not in range 1 to 1024
[exit 2]
$ tapestry optimize g.json --budget-seconds 5 --iterations 10
! tapestry: error: --budget-seconds excludes --iterations
[exit 2]
$ tapestry optimize g.json --iterations x
! tapestry: error: --iterations: expected a positive whole number, got 'x'
[exit 2]
$ tapestry optimize g.json --iterations 0
! tapestry: error: --iterations: expected a positive whole number, got 0
[exit 2]
$ tapestry optimize g.json --iterations 2.5
! tapestry: error: --iterations: expected a positive whole number, got '2.5'
[exit 2]
$ tapestry optimize g.json --iterations 99999999999999999999
! tapestry: error: --iterations: '99999999999999999999' is out of range
[exit 2]
$ tapestry optimize g.json --exchange-every -1
! tapestry: error: --exchange-every: expected a positive whole number, got -1
[exit 2]
$ tapestry optimize g.json --budget-seconds soon
! tapestry: error: --budget-seconds: expected a positive number, got 'soon'
[exit 2]
$ tapestry optimize g.json --budget-seconds inf
! tapestry: error: --budget-seconds: 'inf' is out of range
[exit 2]
$ tapestry optimize g.json --budget-seconds 0
! tapestry: error: --budget-seconds: expected a positive number, got 0
[exit 2]
$ tapestry run plan.json --backend tpu
! tapestry: error: --backend: tpu not in {cpu,cuda}
[exit 2]
$ tapestry bench plan.json --repeat 0
! tapestry: error: --repeat: Value 0 not in range 1 to 100000
[exit 2]
$ tapestry render g.json --view sideways
! tapestry: error: --view: sideways not in {graph,plan,front,timeline,original}
[exit 2]
$ tapestry kernels
! tapestry: error: A subcommand is required
[exit 2]
$ tapestry kernels show
! tapestry: error: NAME is required
[exit 2]
$ tapestry --format json frobnicate
{
  "status": "error",
  "exit_code": 2,
  "error": {
    "message": "unknown command \"frobnicate\"; expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate"
  }
}
! tapestry: error: unknown command "frobnicate"; expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate
[exit 2]
