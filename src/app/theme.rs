//! Colours with meaning, used sparingly: an accent for focus and selection,
//! green and red only for success and failure, dim for secondary text.
//!
//! Themes are YAML (`themes/dark.yaml`, `light.yaml`, `high-contrast.yaml`,
//! embedded); a user file of the same name in `MERLYA_HOME/themes` overrides
//! only the fields it names. Colours degrade from truecolor to the 256 and
//! 16-colour palettes according to the terminal; `NO_COLOR` keeps only
//! modifiers.

use std::collections::BTreeMap;
use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// Styles the views use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    /// Focused borders, selection.
    pub accent: Style,
    /// Secondary text.
    pub dim: Style,
    /// Success.
    pub ok: Style,
    /// Failure, stderr.
    pub error: Style,
    /// Host prefixes in the output pane.
    pub host: Style,
    /// The selected row.
    pub selected: Style,
    /// Warnings (prompts, unknown host keys).
    pub warn: Style,
    /// Background of added lines in diffs.
    pub added: Style,
    /// Background of removed lines in diffs.
    pub removed: Style,
    /// Inline code and code blocks without a known language.
    pub code: Style,
    /// A health reading within its runbook's thresholds (inventory load, disk, memory).
    pub health_ok: Style,
    /// A health reading past its warning threshold.
    pub health_warn: Style,
    /// A health reading past its critical threshold.
    pub health_crit: Style,
    /// The syntect theme that colours code (`None` under `NO_COLOR`: no highlighting).
    pub syntax: Option<String>,
    /// How colours were degraded, so highlighted code degrades the same way.
    pub depth: ColorDepth,
}

/// How many colours the terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorDepth {
    TrueColor,
    Palette256,
    Basic16,
    /// `NO_COLOR`: modifiers only.
    None,
}

impl ColorDepth {
    /// From `NO_COLOR`, `COLORTERM` and `TERM`.
    pub fn detect() -> Self {
        let var = |n: &str| std::env::var(n).unwrap_or_default();
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            ColorDepth::None
        } else if matches!(var("COLORTERM").as_str(), "truecolor" | "24bit") {
            ColorDepth::TrueColor
        } else if var("TERM").contains("256color") {
            ColorDepth::Palette256
        } else {
            ColorDepth::Basic16
        }
    }
}

/// A theme file that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {detail}")]
pub struct ThemeError {
    pub file: String,
    pub detail: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

const FIELDS: [&str; 13] = [
    "accent",
    "dim",
    "ok",
    "error",
    "host",
    "selected",
    "warn",
    "added",
    "removed",
    "code",
    "health_ok",
    "health_warn",
    "health_crit",
];

/// The syntect themes a theme file may name in `syntax:`.
pub const SYNTAX_THEMES: [&str; 7] = [
    "base16-ocean.dark",
    "base16-eighties.dark",
    "base16-mocha.dark",
    "base16-ocean.light",
    "InspiredGitHub",
    "Solarized (dark)",
    "Solarized (light)",
];

const BUILTIN: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.yaml")),
    ("light", include_str!("../../themes/light.yaml")),
    ("high-contrast", include_str!("../../themes/high-contrast.yaml")),
];

fn parse_color(text: &str) -> Result<Color, String> {
    if let Some(hex) = text.strip_prefix('#') {
        let ok = hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit());
        let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
        return if ok { Ok(Color::Rgb(byte(0), byte(2), byte(4))) } else { Err(format!("{text:?} is not #rrggbb")) };
    }
    if let Ok(index) = text.parse::<u8>() {
        return Ok(Color::Indexed(index));
    }
    let named = [
        ("reset", Color::Reset),
        ("black", Color::Black),
        ("red", Color::Red),
        ("green", Color::Green),
        ("yellow", Color::Yellow),
        ("blue", Color::Blue),
        ("magenta", Color::Magenta),
        ("cyan", Color::Cyan),
        ("gray", Color::Gray),
        ("darkgray", Color::DarkGray),
        ("lightred", Color::LightRed),
        ("lightgreen", Color::LightGreen),
        ("lightyellow", Color::LightYellow),
        ("lightblue", Color::LightBlue),
        ("lightmagenta", Color::LightMagenta),
        ("lightcyan", Color::LightCyan),
        ("white", Color::White),
    ];
    named
        .iter()
        .find(|(n, _)| *n == text)
        .map(|(_, c)| *c)
        .ok_or_else(|| format!("unknown colour {text:?}; expected a name (red, lightcyan...), #rrggbb or 0-255"))
}

fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> u32 {
    let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).pow(2) as u32;
    d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2)
}

/// The nearest xterm-256 index of an RGB colour (6×6×6 cube or grey ramp).
pub fn to_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let value = |l: u8| if l == 0 { 0 } else { 55 + 40 * l };
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let cube_rgb = (value(lr), value(lg), value(lb));
    let grey_level = ((u32::from(r) + u32::from(g) + u32::from(b)) / 3).saturating_sub(3) / 10;
    let grey_level = grey_level.min(23) as u8;
    let grey = 8 + 10 * grey_level;
    // A tinted colour keeps its hue even when a grey is nearer: the tints of
    // added and removed diff lines must not both become the same grey.
    let tinted = r.max(g).max(b) - r.min(g).min(b) >= 16 && cube != 16;
    if !tinted && distance((grey, grey, grey), (r, g, b)) < distance(cube_rgb, (r, g, b)) {
        232 + grey_level
    } else {
        cube
    }
}

/// The basic colour of the same hue (bright when the colour is light); greys
/// by lightness. Hue matters more than distance: a pastel red must stay red.
pub fn to_16(r: u8, g: u8, b: u8) -> Color {
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    let chroma = f32::from(max - min);
    if chroma < 40.0 {
        return match max {
            0..=63 => Color::Black,
            64..=159 => Color::DarkGray,
            160..=219 => Color::Gray,
            _ => Color::White,
        };
    }
    let (rf, gf, bf) = (f32::from(r), f32::from(g), f32::from(b));
    let hue = if max == r {
        60.0 * ((gf - bf) / chroma).rem_euclid(6.0)
    } else if max == g {
        60.0 * ((bf - rf) / chroma + 2.0)
    } else {
        60.0 * ((rf - gf) / chroma + 4.0)
    };
    let bright = max > 200;
    let pick = |dark: Color, light: Color| if bright { light } else { dark };
    match hue as u32 {
        0..=29 | 330..=360 => pick(Color::Red, Color::LightRed),
        30..=89 => pick(Color::Yellow, Color::LightYellow),
        90..=149 => pick(Color::Green, Color::LightGreen),
        150..=209 => pick(Color::Cyan, Color::LightCyan),
        210..=269 => pick(Color::Blue, Color::LightBlue),
        _ => pick(Color::Magenta, Color::LightMagenta),
    }
}

/// `color` as the terminal can show it (`None` under `NO_COLOR`); also used
/// for the colours of highlighted code.
pub fn degrade(color: Color, depth: ColorDepth) -> Option<Color> {
    match (color, depth) {
        (_, ColorDepth::None) => None,
        (Color::Rgb(r, g, b), ColorDepth::Palette256) => Some(Color::Indexed(to_256(r, g, b))),
        (Color::Rgb(r, g, b), ColorDepth::Basic16) => Some(to_16(r, g, b)),
        (Color::Indexed(i), ColorDepth::Basic16) if i >= 16 => Some(Color::Reset),
        (c, _) => Some(c),
    }
}

impl Theme {
    /// The built-in dark theme at full colour (tests and screenshots).
    pub fn dark() -> Self {
        Self::builtin("dark", ColorDepth::TrueColor).unwrap_or_else(|_| Self::plain())
    }

    /// No colours at all, modifiers only.
    pub fn plain() -> Self {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Self {
            accent: bold,
            dim: Style::new().add_modifier(Modifier::DIM),
            ok: Style::new(),
            error: bold,
            host: bold,
            selected: Style::new().add_modifier(Modifier::REVERSED),
            warn: bold,
            added: Style::new(),
            removed: Style::new(),
            code: bold,
            health_ok: Style::new(),
            health_warn: bold,
            // Not only a colour: without one, a critical reading still stands out.
            health_crit: bold.add_modifier(Modifier::UNDERLINED),
            syntax: None,
            depth: ColorDepth::None,
        }
    }

    /// A built-in theme.
    pub fn builtin(name: &str, depth: ColorDepth) -> Result<Self, ThemeError> {
        let text = BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).ok_or_else(|| ThemeError {
            file: format!("themes/{name}.yaml"),
            detail: format!("no built-in theme {name:?}; expected dark, light or high-contrast"),
        })?;
        let mut specs = Specs::default();
        apply(&mut specs, &format!("themes/{name}.yaml (built in)"), text)?;
        Ok(Self::from_specs(&specs, depth))
    }

    /// The built-in theme `name` patched by `user_dir/<name>.yaml`, at `depth`.
    pub fn load(name: &str, user_dir: &Path, depth: ColorDepth) -> Result<Self, ThemeError> {
        let text = BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t);
        let user = user_dir.join(format!("{name}.yaml"));
        // A file there that cannot be read (a folder, not UTF-8, too large) is an error, not a
        // theme silently left as built.
        let user_text = crate::input::read_optional(&user, crate::input::SETTINGS_LIMIT, "a theme")
            .map_err(|e| ThemeError { file: user.display().to_string(), detail: e.detail() })?;
        if text.is_none() && user_text.is_none() {
            return Err(ThemeError {
                file: user.display().to_string(),
                detail: format!(
                    "ui.theme {name:?} is not built in (expected dark, light or high-contrast) nor a file here"
                ),
            });
        }
        let mut specs = Specs::default();
        if let Some(text) = text {
            apply(&mut specs, &format!("themes/{name}.yaml (built in)"), text)?;
        } else {
            // A theme of the user's own starts from dark for the fields it does not name.
            apply(&mut specs, "themes/dark.yaml (built in)", BUILTIN[0].1)?;
        }
        if let Some(user_text) = user_text {
            apply(&mut specs, &user.display().to_string(), &user_text)?;
        }
        Ok(Self::from_specs(&specs, depth))
    }

    fn from_specs(specs: &Specs, depth: ColorDepth) -> Self {
        if depth == ColorDepth::None {
            return Self::plain();
        }
        let get = |field: &str| {
            let style = specs.styles.get(field).copied().unwrap_or_default();
            let mut out = Style::new().add_modifier(style.add_modifier);
            if let Some(fg) = style.fg.and_then(|c| degrade(c, depth)) {
                out = out.fg(fg);
            }
            if let Some(bg) = style.bg.and_then(|c| degrade(c, depth)) {
                out = out.bg(bg);
            }
            out
        };
        Self {
            accent: get("accent"),
            dim: get("dim"),
            ok: get("ok"),
            error: get("error"),
            host: get("host"),
            selected: get("selected"),
            warn: get("warn"),
            added: get("added"),
            removed: get("removed"),
            code: get("code"),
            health_ok: get("health_ok"),
            health_warn: get("health_warn"),
            health_crit: get("health_crit"),
            syntax: specs.syntax.clone(),
            depth,
        }
    }
}

/// What theme files say, merged in order.
#[derive(Debug, Default)]
struct Specs {
    styles: BTreeMap<String, Style>,
    syntax: Option<String>,
}

/// Parses a theme file into styles, replacing the fields it names.
fn apply(specs: &mut Specs, file: &str, text: &str) -> Result<(), ThemeError> {
    let err = |detail: String| ThemeError { file: file.to_string(), detail };
    let mut parsed: BTreeMap<String, yaml_serde::Value> =
        crate::input::from_yaml(text).map_err(|e| err(format!("line {}: {}", e.line(), e.message())))?;
    if let Some(syntax) = parsed.remove("syntax") {
        let name = syntax.as_str().unwrap_or_default();
        if !SYNTAX_THEMES.contains(&name) {
            return Err(err(format!(
                "syntax: unknown code theme {}; expected one of {}",
                match syntax.as_str() {
                    Some(name) => format!("{name:?}"),
                    None => "(not a name)".to_string(),
                },
                SYNTAX_THEMES.join(", ")
            )));
        }
        specs.syntax = Some(name.to_string());
    }
    for (field, value) in parsed {
        let spec: StyleSpec = yaml_serde::from_value(value)
            .map_err(|e| err(format!("{field}: {}", crate::input::shorten(&e.to_string()))))?;
        if !FIELDS.contains(&field.as_str()) {
            return Err(err(format!("unknown field {field:?}; expected one of {}", FIELDS.join(", "))));
        }
        let mut style = Style::new();
        if let Some(fg) = &spec.fg {
            style = style.fg(parse_color(fg).map_err(|e| err(format!("{field}.fg: {e}")))?);
        }
        if let Some(bg) = &spec.bg {
            style = style.bg(parse_color(bg).map_err(|e| err(format!("{field}.bg: {e}")))?);
        }
        for m in &spec.modifiers {
            let modifier = match m.as_str() {
                "bold" => Modifier::BOLD,
                "dim" => Modifier::DIM,
                "italic" => Modifier::ITALIC,
                "underlined" => Modifier::UNDERLINED,
                "reversed" => Modifier::REVERSED,
                other => {
                    return Err(err(format!(
                        "{field}.modifiers: unknown modifier {other:?}; expected bold, dim, italic, underlined or reversed"
                    )));
                }
            };
            style = style.add_modifier(modifier);
        }
        specs.styles.insert(field, style);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_at_every_depth() {
        for name in ["dark", "light", "high-contrast"] {
            for depth in [ColorDepth::TrueColor, ColorDepth::Palette256, ColorDepth::Basic16, ColorDepth::None] {
                Theme::builtin(name, depth).unwrap();
            }
        }
        assert_eq!(
            Theme::builtin("dark", ColorDepth::TrueColor).unwrap().accent.fg,
            Some(Color::Rgb(0x89, 0xb4, 0xfa))
        );
        assert_eq!(Theme::builtin("dark", ColorDepth::None).unwrap(), Theme::plain());
    }

    #[test]
    fn colours_degrade_to_256_and_16() {
        assert_eq!(to_256(255, 0, 0), 196);
        assert_eq!(to_256(128, 128, 128), 244);
        assert_eq!(to_16(250, 10, 10), Color::LightRed);
        for name in ["dark", "light", "high-contrast"] {
            let t = Theme::builtin(name, ColorDepth::Palette256).unwrap();
            let (a, r) = (t.added.bg.or(t.added.fg), t.removed.bg.or(t.removed.fg));
            assert_ne!(a, r, "{name} at 256 colours: added and removed lines stay distinct");
        }
        let t = Theme::builtin("dark", ColorDepth::Palette256).unwrap();
        assert!(matches!(t.ok.fg, Some(Color::Indexed(_))));
        let t = Theme::builtin("dark", ColorDepth::Basic16).unwrap();
        assert_eq!(
            (t.error.fg, t.ok.fg, t.accent.fg),
            (Some(Color::LightRed), Some(Color::LightGreen), Some(Color::LightBlue))
        );
        assert_eq!(to_16(0x80, 0x80, 0x80), Color::DarkGray);
    }

    #[test]
    fn a_user_file_overrides_only_named_fields() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("dark.yaml"), "accent: { fg: \"#ff8800\", modifiers: [bold] }\n").unwrap();
        let t = Theme::load("dark", dir.path(), ColorDepth::TrueColor).unwrap();
        assert_eq!(t.accent, Style::new().fg(Color::Rgb(255, 136, 0)).add_modifier(Modifier::BOLD));
        assert_eq!(t.ok, Theme::dark().ok, "fields not named keep the built-in value");
    }

    #[test]
    fn a_theme_that_is_nowhere_names_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let e = Theme::load("nosuch", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert_eq!(e.file, dir.path().join("nosuch.yaml").display().to_string());
        assert!(
            e.detail.contains("ui.theme \"nosuch\" is not built in (expected dark, light or high-contrast)"),
            "{}",
            e.detail
        );
    }

    #[test]
    fn mistakes_name_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dark.yaml");
        let cases = [
            ("acent: { fg: red }\n", "unknown field \"acent\""),
            ("ok: { fg: chartreuse }\n", "ok.fg: unknown colour \"chartreuse\""),
            ("ok: { fg: \"#12345\" }\n", "ok.fg: \"#12345\" is not #rrggbb"),
            ("ok: { modifiers: [blink] }\n", "ok.modifiers: unknown modifier \"blink\""),
            ("ok: { colour: red }\n", "unknown field `colour`"),
            ("syntax: monokai\n", "syntax: unknown code theme \"monokai\"; expected one of"),
            ("syntax: [a]\n", "syntax: unknown code theme (not a name)"),
        ];
        for (text, expected) in cases {
            std::fs::write(&file, text).unwrap();
            let e = Theme::load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
            assert_eq!(e.file, file.display().to_string());
            assert!(e.detail.contains(expected), "{text:?} → {}", e.detail);
        }
    }

    #[test]
    fn a_user_theme_that_is_a_folder_not_utf8_or_too_deep_stops_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dark.yaml");
        std::fs::write(
            &file,
            b"accent: { fg: red }
ok: { fg: \"caf\xe9\" }\n",
        )
        .unwrap();
        let e = Theme::load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert_eq!(e.file, file.display().to_string());
        assert!(e.detail.contains("line 2: column 15: byte 0xe9 is not UTF-8"), "{}", e.detail);

        std::fs::write(&file, format!("accent: {}\n", "[".repeat(200_000))).unwrap();
        let e = Theme::load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert!(e.detail.contains("line 1: nested deeper than 100 levels"), "{}", e.detail);

        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        let e = Theme::load("dark", dir.path(), ColorDepth::TrueColor).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.detail.as_str()),
            (file.display().to_string().as_str(), "is a folder, expected a file")
        );
    }
}
