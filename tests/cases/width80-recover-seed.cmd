recover --width 80 -
