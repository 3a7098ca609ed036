## --version in text and JSON; cuda_backend depends on the build.
$ tapestry --version
tapestry 0.1.0
$ tapestry --format=json --version | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["name"], d["version"], sorted(d))'
tapestry 0.1.0 ['cuda_backend', 'name', 'version']
