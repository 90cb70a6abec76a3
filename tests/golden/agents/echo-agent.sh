#!/bin/sh
# A stand-in agent for the golden tests: corral check only needs it to exist.
exec cat
