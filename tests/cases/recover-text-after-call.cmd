recover --input-format text -
