package plans

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// cutEvery is about how many bytes of a native-syntax file hcl parses at
// a time (parseCut). hcl lexes what it parses into one array of tokens,
// a hundred bytes each, grown by doubling and held until the parse ends:
// for a whole 300 KB plan that is tens of megabytes the garbage collector
// marks and the kernel maps afresh, more than the tree the parse makes.
// A piece of a few kilobytes keeps the tokens in a few hundred
// kilobytes of memory used again and again; the tree is the same.
const cutEvery = 2 << 10

// parseCut parses src in the pieces that cuts (nativeScan's) mark off,
// each by hcl's parser starting where the piece starts in the file, and
// joins their bodies into the file's: the tree is the one parsing it
// whole makes, every range the same. It returns nil when a piece has
// anything to report, or two pieces set the same attribute, for the
// file to be parsed whole: hcl's messages are then its own, at the
// places it gives them.
//
// each, when not nil, is given each piece's body as it is parsed, in
// the file's order, though a later piece may still send the file to the
// whole parse.
func parseCut(filename string, src []byte, cuts []int, each func(hclsyntax.Node)) *hcl.File {
	if len(cuts) == 0 {
		return nil
	}
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, Blocks: hclsyntax.Blocks{}}
	nav := &cutNav{starts: make([]int, 0, len(cuts)+1)}
	pos := hcl.InitialPos
	for i := 0; i <= len(cuts); i++ {
		end := len(src)
		if i < len(cuts) {
			end = cuts[i]
		}
		f, diags := hclsyntax.ParseConfig(src[pos.Byte:end], filename, pos)
		if len(diags) > 0 {
			return nil
		}
		b := f.Body.(*hclsyntax.Body)
		for name, a := range b.Attributes {
			if _, twice := body.Attributes[name]; twice {
				return nil
			}
			body.Attributes[name] = a
		}
		body.Blocks = append(body.Blocks, b.Blocks...)
		if each != nil {
			each(b)
		}
		if i == 0 {
			body.SrcRange = b.SrcRange
		}
		body.SrcRange.End, body.EndRange = b.SrcRange.End, b.EndRange
		nav.starts = append(nav.starts, pos.Byte)
		nav.navs = append(nav.navs, f.Nav)
		// The next piece starts where hcl's lexer left this one, which
		// counts lines and columns by grapheme (bytes that are not UTF-8
		// may hide a newline), and would have gone on from there.
		pos = b.EndRange.End
		if pos.Byte != end {
			return nil
		}
	}
	return &hcl.File{Body: body, Bytes: src, Nav: nav}
}

// cutNav is what hcl's diagnostic writer asks of a file for the block a
// message is in (hcl.File.Nav), answered by the navigation of the piece
// of the file that holds the offset.
type cutNav struct {
	starts []int // of each piece, in the file
	navs   []any // hclsyntax's navigation of each piece
}

func (n *cutNav) at(offset int) any {
	i := sort.SearchInts(n.starts, offset+1) - 1
	if i < 0 {
		return nil
	}
	return n.navs[i]
}

func (n *cutNav) ContextString(offset int) string {
	if nav, ok := n.at(offset).(interface{ ContextString(int) string }); ok {
		return nav.ContextString(offset)
	}
	return ""
}

func (n *cutNav) ContextDefRange(offset int) hcl.Range {
	if nav, ok := n.at(offset).(interface{ ContextDefRange(int) hcl.Range }); ok {
		return nav.ContextDefRange(offset)
	}
	return hcl.Range{}
}
