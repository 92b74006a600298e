//go:build !linux

package main

// fakeSlurmMain: the fake Slurm serves the contract test, which runs on
// Linux only.
func fakeSlurmMain() {}

// fakeSgeMain: likewise the fake Grid Engine.
func fakeSgeMain() {}
