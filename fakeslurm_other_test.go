//go:build !linux

package main

// fakeSlurmMain: the fake Slurm serves the contract test, which runs on
// Linux only.
func fakeSlurmMain() {}
