package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
)

// ManCmd prints faber(1), the manual page, generated from the same command
// model as --help (release builds ship it as faber.1).
type ManCmd struct{}

// Help explains man.
func (c *ManCmd) Help() string {
	return `Prints the manual page faber(1) in roff, made from the same descriptions as
--help. Release archives carry it as faber.1; after go install, write it
where man looks.

Examples:
  mkdir -p ~/.local/share/man/man1 && faber man > ~/.local/share/man/man1/faber.1 && man faber
  faber man | man -l -`
}

// Run writes the page in roff (man -l faber.1 shows it).
func (c *ManCmd) Run(ctx *kong.Context, g *Globals) error {
	writeMan(g.stdout, ctx.Model, currentBuild().Version)
	return nil
}

func writeMan(w io.Writer, app *kong.Application, version string) {
	fmt.Fprintf(w, ".TH FABER 1 \"\" \"faber %s\" \"User Commands\"\n", roffText(version))
	fmt.Fprintf(w, ".SH NAME\nfaber \\- run workflow plans, with their failure handlers exactly as written\n")
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B faber\n.I command\n[\\fIflags\\fR]\n")
	fmt.Fprintf(w, ".SH DESCRIPTION\n")
	roffBlock(w, app.Help)
	fmt.Fprintf(w, ".SH GLOBAL FLAGS\n")
	for _, f := range app.Flags {
		manFlag(w, f)
	}
	fmt.Fprintf(w, ".SH COMMANDS\n")
	for _, n := range app.Leaves(true) {
		fmt.Fprintf(w, ".SS \"%s\"\n", roffText("faber "+n.Summary()))
		roffBlock(w, n.Help)
		if n.Detail != "" {
			fmt.Fprintln(w, ".PP")
			roffBlock(w, n.Detail)
		}
		for _, p := range n.Positional {
			fmt.Fprintf(w, ".TP\n.I %s\n", roffText(p.Name))
			roffBlock(w, p.Help)
		}
		for _, f := range n.Flags {
			if !f.Hidden {
				manFlag(w, f)
			}
		}
	}
	fmt.Fprintf(w, ".SH ENVIRONMENT\n.TP\n.B FABER_STATE_DIR\nthe state dir (as \\-\\-state\\-dir).\n.TP\n.B NO_COLOR\nno colours (as \\-\\-no\\-color).\n")
	fmt.Fprintf(w, ".SH SEE ALSO\nThe README's reference section documents every plan field, status and event.\n")
}

func manFlag(w io.Writer, f *kong.Flag) {
	name := "--" + f.Name
	if f.Short != 0 {
		name = "-" + string(f.Short) + ", " + name
	}
	if !f.IsBool() && !f.IsCounter() {
		name += "=" + f.FormatPlaceHolder()
	}
	fmt.Fprintf(w, ".TP\n.B %s\n", roffText(name))
	roffBlock(w, f.Help)
}

// roffBlock writes text as paragraphs: blank lines separate them, indented
// lines (examples) are kept as they are.
func roffBlock(w io.Writer, text string) {
	inExample := false
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			if inExample {
				fmt.Fprintln(w, ".fi")
				inExample = false
			}
			fmt.Fprintln(w, ".PP")
		case strings.HasPrefix(line, "  "):
			if !inExample {
				fmt.Fprintln(w, ".nf")
				inExample = true
			}
			fmt.Fprintln(w, roffText(line))
		default:
			if inExample {
				fmt.Fprintln(w, ".fi")
				inExample = false
			}
			fmt.Fprintln(w, roffText(line))
		}
	}
	if inExample {
		fmt.Fprintln(w, ".fi")
	}
}

// roffText escapes a line for roff: backslashes, hyphens (which would
// otherwise print as typographic ones) and a leading control character.
func roffText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
