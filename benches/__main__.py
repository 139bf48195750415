"""`python -m benches`: the benchmark of `relmodel bench` (see relmodel/bench)."""

from relmodel._bench import benchmark_main

benchmark_main()
