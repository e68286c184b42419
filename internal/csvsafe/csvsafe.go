// Package csvsafe keeps spreadsheets from running exported text as formulas.
package csvsafe

import "strconv"

// Cell returns c as a CSV cell a spreadsheet shows as text: text starting with = + @, a
// tab or a carriage return, or with - when it is not a number, gets a leading '.
func Cell(c string) string {
	if c == "" {
		return c
	}
	switch c[0] {
	case '=', '+', '@', '\t', '\r':
		return "'" + c
	case '-':
		if _, err := strconv.ParseFloat(c, 64); err != nil {
			return "'" + c
		}
	}
	return c
}
