decode --tokens -
