//! Text from the network made safe for a terminal.
//!
//! Server names, maps, player names, rules, callsigns, mottos and reject or kick reasons come from peers, and a
//! terminal obeys what they contain: an escape sequence can move the cursor, rewrite earlier lines, set the window
//! title, or (on some terminals) answer back as if typed. Every text output of bzhead passes such strings through
//! [`for_terminal`] (JSON output keeps them exact: JSON escapes control characters itself).

use std::borrow::Cow;

/// ESC, the start of every 7-bit escape sequence.
const ESC: char = '\u{1b}';
/// BEL, which also ends an operating-system command.
const BEL: char = '\u{7}';
/// The 8-bit string terminator.
const ST8: char = '\u{9c}';

/// True for the characters [`for_terminal`] takes out or replaces: C0 and C1 controls and DEL (Unicode's `Cc`),
/// the bidirectional embedding, override and isolate controls (which reorder what follows them on the line), and
/// the line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `s` with every escape sequence removed and every other unsafe character ([`is_unsafe`]) removed, except that
/// tabs, line breaks and the Unicode line and paragraph separators become a space (so that words stay apart).
/// Borrowed when there is nothing to change (the usual case). Linear in the length of `s`.
///
/// Escape sequences: 7-bit (`ESC [` control sequences up to their final byte; `ESC ]`, `ESC P`, `ESC X`, `ESC ^`
/// and `ESC _` strings up to their terminator, BEL or the end; other `ESC` + intermediates + final) and their 8-bit
/// C1 forms (`U+009B` for `ESC [`; `U+009D`, `U+0090`, `U+0098`, `U+009E`, `U+009F` for the strings).
///
/// ```
/// use bzhead::text::for_terminal;
/// assert_eq!(for_terminal("\u{1b}[2J\u{1b}]0;pwned\u{7}Server\u{202e}1\tA"), "Server1 A");
/// assert_eq!(for_terminal("plain name"), "plain name");
/// ```
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ESC => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                Some(_) => {
                    // ESC, intermediates (SP../), one final (0..~); anything else ends it without being eaten.
                    while chars.next_if(|d| ('\u{20}'..='\u{2f}').contains(d)).is_some() {}
                    chars.next_if(|d| ('\u{30}'..='\u{7e}').contains(d));
                }
                None => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\t' | '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => out.push(' '),
            c if is_unsafe(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A control sequence after its introducer: parameter and intermediate bytes, then one final byte. A character
/// outside the grammar ends it and is not eaten.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|d| ('\u{20}'..='\u{3f}').contains(d)).is_some() {}
    chars.next_if(|d| ('\u{40}'..='\u{7e}').contains(d));
}

/// A command string after its introducer, up to and including its terminator (`ESC \`, the 8-bit ST or BEL), or to
/// the end of the text.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | ST8 => return,
            ESC => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(for_terminal("Ünïcode ^1colour [brackets]"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_class_of_sequence_is_removed() {
        let cases = [
            ("\u{1b}[31mred\u{1b}[0m text\u{7}", "red text"),
            ("a\u{1b}[2J\u{1b}[Hb", "ab"),
            ("a\u{1b}[?1049hb", "ab"),
            ("t\u{1b}]0;title\u{7}x", "tx"),
            ("t\u{1b}]8;;http://evil\u{1b}\\link\u{1b}]8;;\u{1b}\\", "tlink"),
            ("a\u{1b}P+q544e\u{1b}\\b", "ab"),
            ("a\u{1b}_apc\u{9c}b", "ab"),
            ("a\u{1b}(Bb\u{1b}7c\u{1b}c", "abc"),
            ("a\u{9b}31mb", "ab"),
            ("a\u{9d}0;t\u{7}b", "ab"),
            ("a\u{85}b\u{7f}c\u{0}d", "a bcd"),
            ("left\u{202e}thgir\u{202c} \u{2066}x\u{2069}", "leftthgir x"),
            ("line\nbreak\r\ttab", "line break  tab"),
            ("unterminated \u{1b}]0;title", "unterminated "),
            ("trailing \u{1b}", "trailing "),
            ("\u{1b}[", ""),
        ];
        for (input, want) in cases {
            let got = for_terminal(input);
            assert_eq!(got, want, "{input:?}");
            assert!(!got.chars().any(is_unsafe), "{input:?} -> {got:?}");
        }
    }

    #[test]
    fn nothing_unsafe_survives_any_byte_soup() {
        // Every short mix of the interesting characters: the output never holds one.
        let alphabet =
            ['\u{1b}', '[', ']', '\\', '\u{7}', '\u{9b}', '\u{9c}', '\u{9d}', 'm', '0', ';', 'a', '\u{202e}'];
        let n = alphabet.len();
        for code in 0..n.pow(5) {
            let mut s = String::new();
            let mut k = code;
            for _ in 0..5 {
                s.push(alphabet[k % n]);
                k /= n;
            }
            let got = for_terminal(&s);
            assert!(!got.chars().any(is_unsafe), "{s:?} -> {got:?}");
        }
    }
}
