grammar
