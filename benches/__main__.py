"""`python -m benches`: the benchmark of `relmodel bench` (see relmodel/bench)."""

from relmodel.bench import main

main()
