explain -
