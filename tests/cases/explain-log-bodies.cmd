explain -f json -
