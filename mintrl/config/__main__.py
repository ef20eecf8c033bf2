from mintrl.config.loading import main

main()
