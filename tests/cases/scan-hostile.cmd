scan - -j 1 --by code,pattern
