explain --grammar --format json -
