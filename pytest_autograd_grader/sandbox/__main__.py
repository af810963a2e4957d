import sys

from .zygote import main

main(sys.argv[1:])
