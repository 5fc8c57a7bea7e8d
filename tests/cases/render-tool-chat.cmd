render -
