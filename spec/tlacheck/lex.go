// Package tlacheck is a static check of a TLA+ module for the mistakes SANY
// and TLC would report and that the Go twin cannot see: identifiers used
// but not declared, operators applied with the wrong number of arguments,
// unbalanced brackets, IF/THEN/ELSE, CASE and LET/IN, variables missing from
// vars, and actions that neither assign nor leave unchanged every variable.
//
// It is not a TLA+ parser: it reads the subset of TLA+ that spec/*.tla is
// written in (definitions start in column 0, bullet lists are aligned) and
// is tested on broken variants of the module. SANY and TLC cannot be
// installed on the project's machines; this check runs with `go test`.
package tlacheck

import (
	"fmt"
	"strings"
	"unicode"
)

// Token is one lexeme of the module.
type Token struct {
	Kind      TokKind
	Text      string
	Line, Col int  // 1-based line, 0-based column
	LineStart bool // first token on its line
}

// TokKind classifies tokens.
type TokKind int

const (
	Ident  TokKind = iota + 1 // names and keywords
	Number                    // 123
	String                    // "..."
	Op                        // operators and punctuation
)

func (t Token) String() string { return fmt.Sprintf("%d:%d %q", t.Line, t.Col+1, t.Text) }

// operators, longest first for each leading character.
var operators = []string{
	"<=>", "|->", "...", "----", "====",
	"==", "/\\", "\\/", "=>", "->", "<-", "<=", ">=", "<<", ">>", "..", "[]", "<>", "::", "\\o",
	"=", "#", "<", ">", "+", "-", "*", "/", "%", "^", "~", "'", "!", "@", "(", ")", "[", "]", "{", "}", ",", ":", ".", "_", "|", "&",
}

// Lex splits src into tokens, dropping comments. It stops at the module's
// closing ==== line.
func Lex(src string) ([]Token, error) {
	var toks []Token
	line, col := 1, 0
	i := 0
	lastLine := 0
	emit := func(k TokKind, text string) {
		toks = append(toks, Token{Kind: k, Text: text, Line: line, Col: col, LineStart: line != lastLine})
		lastLine = line
	}
	advance := func(n int) {
		for j := 0; j < n; j++ {
			if src[i] == '\n' {
				line++
				col = 0
			} else {
				col++
			}
			i++
		}
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r':
			advance(1)
		case strings.HasPrefix(src[i:], "\\*"):
			for i < len(src) && src[i] != '\n' {
				advance(1)
			}
		case strings.HasPrefix(src[i:], "(*"):
			depth := 0
			for i < len(src) {
				if strings.HasPrefix(src[i:], "(*") {
					depth++
					advance(2)
				} else if strings.HasPrefix(src[i:], "*)") {
					depth--
					advance(2)
					if depth == 0 {
						break
					}
				} else {
					advance(1)
				}
			}
			if depth != 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			emit(String, src[i:j+1])
			advance(j + 1 - i)
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			if j < len(src) && isIdentByte(src[j]) && !(src[j] >= '0' && src[j] <= '9') {
				// 1_x is not a number; TLA+ allows identifiers starting with digits, this module does not use them.
				return nil, fmt.Errorf("line %d: identifier starting with a digit", line)
			}
			emit(Number, src[i:j])
			advance(j - i)
		case c == '\\' && i+1 < len(src) && unicode.IsLetter(rune(src[i+1])):
			// \in, \A, \E, \X, \cup, \subseteq, \div, ...
			j := i + 1
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			emit(Op, src[i:j])
			advance(j - i)
		case c == '\\':
			if strings.HasPrefix(src[i:], "\\/") {
				emit(Op, "\\/")
				advance(2)
			} else {
				emit(Op, "\\")
				advance(1)
			}
		case isIdentByte(c):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			emit(Ident, src[i:j])
			advance(j - i)
		default:
			matched := ""
			for _, op := range operators {
				if strings.HasPrefix(src[i:], op) {
					matched = op
					break
				}
			}
			if matched == "" {
				return nil, fmt.Errorf("line %d col %d: unexpected character %q", line, col+1, c)
			}
			if matched == "----" || matched == "====" {
				j := i
				for j < len(src) && (src[j] == '-' || src[j] == '=') {
					j++
				}
				emit(Op, matched)
				advance(j - i)
				if matched == "====" {
					return toks, nil
				}
				continue
			}
			emit(Op, matched)
			advance(len(matched))
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
