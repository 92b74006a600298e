//go:build !unix

package main

func openFileLimit() uint64 { return 0 }

func checkOpenFiles() error { return nil }
