## Subcommands whose issue has not landed exit 2 and say so.
$ tapestry run plan.json
! tapestry: error: 'run' is not implemented yet
[exit 2]
$ tapestry bench plan.json
! tapestry: error: 'bench' is not implemented yet
[exit 2]
$ tapestry bench plan.json --format json
{
  "status": "error",
  "exit_code": 2,
  "error": {
    "message": "'bench' is not implemented yet"
  }
}
! tapestry: error: 'bench' is not implemented yet
[exit 2]
