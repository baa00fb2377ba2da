//! Handing the terminal to someone else and taking it back: Ctrl-Z gives it to the shell, `s` to
//! an interactive ssh session. One pair of functions so both leave and restore the same modes.

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture};
use ratatui::DefaultTerminal;

/// Ctrl-Z: restores the terminal, stops the process, and takes the screen back on `fg`.
pub(super) fn suspend(terminal: &mut DefaultTerminal) -> Result<()> {
    give_back_terminal();
    // SAFETY: raising SIGTSTP on ourselves is what a shell expects of a suspended program.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    // Resumed by SIGCONT.
    take_back_terminal(terminal)
}

/// Gives the terminal back to the shell or a program the console runs (Ctrl-Z, `s`): paste and
/// mouse off, raw mode and the alternate screen left.
pub(super) fn give_back_terminal() {
    let _ = crossterm::execute!(std::io::stdout(), DisableBracketedPaste, DisableMouseCapture);
    ratatui::restore();
}

/// Takes the terminal back: raw mode, the alternate screen, paste and mouse, and a full redraw.
pub(super) fn take_back_terminal(terminal: &mut DefaultTerminal) -> Result<()> {
    crossterm::terminal::enable_raw_mode().wrap_err("cannot resume the terminal")?;
    crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture
    )
    .wrap_err("cannot resume the terminal")?;
    terminal.clear().wrap_err("cannot redraw")?;
    Ok(())
}
