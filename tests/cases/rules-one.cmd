rules HD107
