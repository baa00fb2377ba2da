//! Renders a ratatui buffer to SVG, so screenshots/ is produced from the same
//! fixtures as the snapshot tests (converted to PNG by scripts/screenshots.sh).

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f32 = 8.4;
const CELL_H: f32 = 17.0;
const BACKGROUND: &str = "#1e1e2e";
const FOREGROUND: &str = "#cdd6f4";

fn hex(color: Color, default: &str) -> String {
    match color {
        Color::Reset => default.to_string(),
        Color::Black => "#45475a".into(),
        Color::Red => "#f38ba8".into(),
        Color::Green => "#a6e3a1".into(),
        Color::Yellow => "#f9e2af".into(),
        Color::Blue => "#89b4fa".into(),
        Color::Magenta => "#f5c2e7".into(),
        Color::Cyan => "#94e2d5".into(),
        Color::Gray => "#bac2de".into(),
        Color::DarkGray => "#585b70".into(),
        Color::LightRed => "#f38ba8".into(),
        Color::LightGreen => "#a6e3a1".into(),
        Color::LightYellow => "#f9e2af".into(),
        Color::LightBlue => "#89b4fa".into(),
        Color::LightMagenta => "#f5c2e7".into(),
        Color::LightCyan => "#94e2d5".into(),
        Color::White => "#ffffff".into(),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(_) => default.to_string(),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The buffer as an SVG document.
pub fn buffer_to_svg(buffer: &Buffer) -> String {
    let area = buffer.area;
    let (w, h) = (f32::from(area.width) * CELL_W, f32::from(area.height) * CELL_H);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"{BACKGROUND}\"/>\n\
         <g font-family=\"DejaVu Sans Mono, monospace\" font-size=\"14\" xml:space=\"preserve\">\n"
    );
    for y in 0..area.height {
        for x in 0..area.width {
            let cell = &buffer[(x, y)];
            let reversed = cell.modifier.contains(Modifier::REVERSED);
            let (mut fg, mut bg) = (hex(cell.fg, FOREGROUND), hex(cell.bg, BACKGROUND));
            if reversed {
                std::mem::swap(&mut fg, &mut bg);
            }
            let (px, py) = (f32::from(x) * CELL_W, f32::from(y) * CELL_H);
            if bg != BACKGROUND {
                out.push_str(&format!(
                    "<rect x=\"{px}\" y=\"{py}\" width=\"{CELL_W}\" height=\"{CELL_H}\" fill=\"{bg}\"/>\n"
                ));
            }
            let symbol = cell.symbol();
            if symbol.trim().is_empty() {
                continue;
            }
            let mut attrs = format!("fill=\"{fg}\"");
            if cell.modifier.contains(Modifier::BOLD) {
                attrs.push_str(" font-weight=\"bold\"");
            }
            if cell.modifier.contains(Modifier::DIM) {
                attrs.push_str(" fill-opacity=\"0.6\"");
            }
            out.push_str(&format!("<text x=\"{px}\" y=\"{}\" {attrs}>{}</text>\n", py + CELL_H * 0.78, escape(symbol)));
        }
    }
    out.push_str("</g>\n</svg>\n");
    out
}
