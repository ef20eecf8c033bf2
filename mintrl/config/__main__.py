from mintrl.cli import run_main
from mintrl.config.loading import main

run_main(main)
