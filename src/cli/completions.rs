//! What clap's generated completion scripts cannot know: the inventory. For
//! bash, a snippet appended to the script completes host names and `@tags`
//! where a command takes targets or a host, from `merlya hosts list --names`
//! (read when Tab is pressed, so it is current). Other shells get clap's
//! script alone until theirs can be tested here.

use clap_complete::Shell;

/// The extra completion code for `shell` (empty where none is provided).
pub fn targets(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => BASH,
        _ => "",
    }
}

const BASH: &str = r#"
# Host names and @tags from the inventory where merlya takes targets or a host.
_merlya_inventory() {
    local cur="${COMP_WORDS[COMP_CWORD]}" sub="${COMP_WORDS[1]}" verb="${COMP_WORDS[2]}"
    if { [[ $sub == exec && $COMP_CWORD -eq 2 ]] ||
         [[ $sub == hosts && $COMP_CWORD -eq 3 && $verb =~ ^(show|rm|tag|untag|detect-elevation)$ ]]; } &&
       [[ $cur != -* ]]; then
        local IFS=$'\n'
        COMPREPLY=($(compgen -W "$(merlya hosts list --names 2>/dev/null)" -- "$cur"))
        return 0
    fi
    _merlya "$@"
}
complete -F _merlya_inventory -o bashdefault -o default merlya
"#;
