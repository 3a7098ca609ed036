## --help prints usage and exits 0, for the tool and every subcommand.
$ tapestry --help
tapestry: shard tensor programs across devices.
Expands graphs of tensor operations through metakernels, searches the Pareto front of sharding plans, renders them, and runs them on CPU or CUDA.
Usage: tapestry [OPTIONS] [SUBCOMMAND]

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  --version                   Print the version and exit
  --format text|json          Output format: text, or json (one document on stdout)
  -q,--quiet                  Print only errors and warnings
  -v,--verbose                Print more about what is happening

Subcommands:
  import                      Import an ONNX model as a graph: shape inference, folding of shape arithmetic, every node as standard-library operations
  expand                      Expand a graph: apply metakernels to every operation, infer shapes, index spaces and index projection functions
  kernels                     List, print or validate metakernels (the standard library and any -k files)
  rewrites                    List, print or check the rewrite rules (substitutions and fusions; the standard ones and any -r files)
  optimize                    Search shardings and device placements; keep the Pareto front over (time, peak memory per device, bytes moved)
  render                      Draw a graph, a sharded plan, a Pareto front or a timeline with Graphviz
  run                         Execute a plan shard by shard on a backend; --check compares with the unsharded graph
  bench                       Time a plan against its predicted time and the unsharded single-device baseline
  trace                       Write a plan's predicted schedule as a Chrome trace (open it in Perfetto); run --trace and bench --trace add a measured run beside it
  calibrate                   Measure this machine through a real backend and write a target with a measured profile (what --target local then uses)

Exit codes: 0 ok, 1 invalid input, 2 usage error, 3 check failed, 4 backend unavailable, 70 internal error, 130 interrupted.
Run 'tapestry COMMAND --help' for a command's options.
$ tapestry expand --help
Expand a graph: apply metakernels to every operation, infer shapes, index spaces and index projection functions
Usage: tapestry expand [OPTIONS] GRAPH

Positionals:
  GRAPH TEXT REQUIRED         Graph file (graph/v1 or expanded/v1 JSON), or - for stdin

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)
  -o,--output TEXT=-          Output file (expanded/v1 JSON), - for stdout
  --override-kernels          Let -k files redefine standard-library kernels
  --rewrites TEXT=none        Rewrite the graph after expanding it: none (the default), default (every rule marked always or search), or a rule file whose rules all apply
  -r,--rules TEXT=[] ...      Extra rewrite rule YAML file or directory (repeatable)
  --approximate               Also apply the rules marked approximate (equal only approximately, as gelu_as_tanh; run --check then reports how far they moved the outputs)

$ tapestry kernels --help
List, print or validate metakernels (the standard library and any -k files)
Usage: tapestry kernels [OPTIONS] SUBCOMMAND

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)
  --override-kernels          Let -k files redefine standard-library kernels

Subcommands:
  list                        List kernels with their ports, params and doc
  show                        Print one kernel's template
  check                       Validate every kernel (exit 3 on failure)

$ tapestry kernels show --help
Print one kernel's template
Usage: tapestry kernels show [OPTIONS] NAME

Positionals:
  NAME TEXT REQUIRED          Kernel name

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit

$ tapestry optimize --help
Search shardings and device placements; keep the Pareto front over (time, peak memory per device, bytes moved)
Usage: tapestry optimize [OPTIONS] GRAPH

Positionals:
  GRAPH TEXT REQUIRED         Graph file (user or expanded), or - for stdin

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)
  --target TEXT=local         Built-in target name or target YAML file
  --rewrites TEXT=default     Rewrite the graph: default (rules marked always before the search; rules marked search, the fusions of conv2d with its residual add and activation, as choices of the search), none, or a rule file whose rules apply besides
  -r,--rules TEXT=[] ...      Extra rewrite rule YAML file or directory (repeatable)
  --approximate               Also apply the rules marked approximate (equal only approximately, as gelu_as_tanh; run --check then reports how far they moved the outputs)
  --seed UINT=0               Random seed (the search is deterministic per seed)
  --budget-seconds FLOAT:POSITIVE=0 Excludes: --iterations
                              Time budget
  --iterations INT:POSITIVE=0 Excludes: --budget-seconds
                              Search iterations (generations of 64 candidate plans; default 300)
  --threads INT:INT in [1 - 1024]=1
                              Search worker threads
  --exhaustive                Enumerate every plan of a small graph (the true front)
  --select TEXT:{fastest,smallest,knee,time}=fastest
                              Plan written to -o: fastest, smallest, knee, or time
  --baseline TEXT:{single,data_parallel,tensor_parallel}
                              Write this baseline's plan to -o instead of the selected one: single, data_parallel or tensor_parallel
  --memory-cap TEXT           Select only among plans whose peak memory per device is at most this, e.g. 40GiB
  --inputs-on TEXT:{host,free,constants}=host
                              Where graph inputs start: host, free (resident on every device that reads them) or constants (only the constant ones resident)
  -o,--output TEXT=-          Selected plan (plan/v1 JSON), - for stdout
  --front TEXT                Also write the front (front/v1 JSON) here
  --exchange-every INT:POSITIVE=10
                              Under mpirun -n K: K islands search with their own seeds and swap their fronts every N iterations (docs/distributed.md); ignored in one process

$ tapestry render --help
Draw a graph, a sharded plan, a Pareto front or a timeline with Graphviz
Usage: tapestry render [OPTIONS] FILE

Positionals:
  FILE TEXT REQUIRED          Graph, expanded graph, plan, front or trace JSON; - for stdin

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -o,--output TEXT=-          Output picture; the format follows the extension: .svg .png .pdf .dot (default: DOT text on stdout)
  --view TEXT:{graph,plan,front,timeline,original}
                              What to draw: graph, plan, front, timeline, or original (a rewritten plan's graph before its rewrites; default: by file)
  --rankdir TEXT:{TB,LR,BT,RL}=TB
                              Layout direction: TB, LR, BT or RL
  --collapse                  Collapse repeated blocks and fold weights into their operation (graph view); one node per operation and device, alike devices once (plan view)
  --max-nodes INT:INT in [1 - 1000000000]=2000
                              Refuse to draw more nodes than this
  --layout-seconds FLOAT:FLOAT in [0.1 - 1e+06]=120
                              Stop Graphviz's layout after this many seconds (exit 1); a graph or plan drawing of 300 nodes or more, not --collapse'd, gets a quarter of them, then is drawn collapsed in the rest
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)

$ tapestry run --help
Execute a plan shard by shard on a backend; --check compares with the unsharded graph
Usage: tapestry run [OPTIONS] PLAN

Positionals:
  PLAN TEXT REQUIRED          Plan (plan/v1), or a graph run on one device (graph/v1, expanded/v1); - for stdin

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)
  --backend TEXT:{cpu,cuda}=cpu
                              Backend: cpu or cuda
  --threads INT:INT in [0 - 4096]=0
                              Cap on CPU worker threads (0: one per device, at most one per core)
  --seed UINT=0               Seed for drawing inputs when --inputs is not given
  --tf32                      Let float32 matrix products use TF32 tensor cores (cuda backend only)
  --trace TEXT                Also write a Chrome trace (open it in Perfetto) of the run beside its prediction to this file
  --inputs TEXT               Directory with one NAME.npy per graph input
  --outputs TEXT              Directory to write NAME.npy per graph output
  --check                     Also run the unsharded graph and compare outputs (exit 3 on mismatch)

$ tapestry bench --help
Time a plan against its predicted time and the unsharded single-device baseline
Usage: tapestry bench [OPTIONS] PLAN

Positionals:
  PLAN TEXT REQUIRED          Plan (plan/v1), or a graph run on one device (graph/v1, expanded/v1); - for stdin

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)
  --backend TEXT:{cpu,cuda}=cpu
                              Backend: cpu or cuda
  --threads INT:INT in [0 - 4096]=0
                              Cap on CPU worker threads (0: one per device, at most one per core)
  --seed UINT=0               Seed for drawing inputs when --inputs is not given
  --tf32                      Let float32 matrix products use TF32 tensor cores (cuda backend only)
  --trace TEXT                Also write a Chrome trace (open it in Perfetto) of the run beside its prediction to this file
  --inputs TEXT               Directory with one NAME.npy per graph input (the same inputs for the plan and the single-device baseline)
  --repeat INT:INT in [1 - 100000]=10
                              Fewest timed repetitions (the median is reported)
  --max-repeat INT:INT in [0 - 100000]=0
                              Most timed repetitions, repeating until the median is stable (0: the larger of --repeat and 50)
  --max-seconds FLOAT=10      No more repetitions past --repeat after timing a plan this long (seconds)
  --warmup INT:INT in [0 - 100000]=2
                              Untimed warm-up repetitions

$ tapestry calibrate --help
Measure this machine through a real backend and write a target with a measured profile (what --target local then uses)
Usage: tapestry calibrate [OPTIONS]

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  --backend TEXT:{cpu,cuda}=cpu
                              Backend to measure: cpu or cuda
  --devices INT:INT in [1 - 65536]=0
                              Devices to measure with (default: every core, or every GPU)
  -o,--output TEXT            Also write the target YAML here (- for stdout)
  --budget-seconds FLOAT=60   About how long to measure, in seconds (at least 0.05)
  --no-save                   Do not save the result as this machine's calibration

