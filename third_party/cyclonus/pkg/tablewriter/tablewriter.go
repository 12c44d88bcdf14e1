// Package tablewriter is the part of github.com/olekukonko/tablewriter v0.0.5's
// API that cyclonus's matcher and kube packages call, written over
// text/tabwriter. It exists because OPA, which mpiguard builds with, needs
// tablewriter v1, whose API is not v0's: one module cannot be built at two
// versions. The tables only explain verdicts to people; no verdict depends
// on them. (mpiguard's patch to cyclonus v0.5.6; see ../../README.mpiguard.md.)
package tablewriter

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table collects rows and renders them as aligned columns.
type Table struct {
	out    io.Writer
	header []string
	footer []string
	rows   [][]string
}

// NewWriter returns a table that Render writes to w.
func NewWriter(w io.Writer) *Table { return &Table{out: w} }

// SetAutoWrapText, SetRowLine and SetAutoMergeCells only changed the looks.
func (t *Table) SetAutoWrapText(bool)   {}
func (t *Table) SetRowLine(bool)        {}
func (t *Table) SetAutoMergeCells(bool) {}

func (t *Table) SetHeader(h []string)       { t.header = h }
func (t *Table) SetFooter(f []string)       { t.footer = f }
func (t *Table) Append(row []string)        { t.rows = append(t.rows, row) }
func (t *Table) AppendBulk(rows [][]string) { t.rows = append(t.rows, rows...) }

// Render writes header, rows and footer, one line per line of a cell.
func (t *Table) Render() {
	w := tabwriter.NewWriter(t.out, 0, 4, 2, ' ', 0)
	for _, row := range append(append([][]string{t.header}, t.rows...), t.footer) {
		if row == nil {
			continue
		}
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = strings.ReplaceAll(c, "\n", "; ")
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	_ = w.Flush()
}
