"""`python -m jbind.bench ...`: the same as the `jbind-bench` command."""
from . import main

main()
