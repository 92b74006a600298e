// Package mcp is faber's Model Context Protocol server: the tools with which
// an AI agent reads a run and decides on its pending_failed steps (SPEC §6),
// over the runs of one state dir. Every read and change goes through
// internal/run, as the CLI's do, so both answer alike.
package mcp
