recover --width 200 -
