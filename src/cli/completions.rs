//! What clap's generated completion scripts cannot know: the inventory. For
//! bash, zsh and fish, a snippet appended to the script completes host names
//! and `@tags` where a command takes targets (`exec TARGETS`, `--targets`) or
//! a host (`hosts show|rm|tag|untag|detect-elevation NAME`), from `merlya
//! hosts list --names` (read when Tab is pressed, so it is current).

use clap_complete::Shell;

/// The extra completion code for `shell` (empty where none is provided).
pub fn targets(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
        _ => "",
    }
}

const BASH: &str = r#"
# Host names and @tags from the inventory where merlya takes targets or a host.
_merlya_inventory() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" sub="${COMP_WORDS[1]}" verb="${COMP_WORDS[2]}"
    if { [[ $sub == exec && $COMP_CWORD -eq 2 ]] || [[ $prev == --targets ]] ||
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

const ZSH: &str = r#"
# Host names and @tags from the inventory where merlya takes targets or a host.
_merlya_inventory() {
    if { [[ ${words[2]} == exec && $CURRENT -eq 3 ]] || [[ ${words[CURRENT-1]} == --targets ]] ||
         [[ ${words[2]} == hosts && $CURRENT -eq 4 && ${words[3]} == (show|rm|tag|untag|detect-elevation) ]] } &&
       [[ $PREFIX != -* ]]; then
        local -a names
        names=(${(f)"$(merlya hosts list --names 2>/dev/null)"})
        compadd -a names
        return
    fi
    _merlya "$@"
}
compdef _merlya_inventory merlya
"#;

const FISH: &str = r#"
# Host names and @tags from the inventory where merlya takes targets or a host.
function __merlya_inventory
    merlya hosts list --names 2>/dev/null
end
function __merlya_wants_targets
    set -l words (commandline -opc)
    test (count $words) -eq 2; and test "$words[2]" = exec; and return 0
    test (count $words) -eq 3; and test "$words[2]" = hosts; and contains -- "$words[3]" show rm tag untag detect-elevation; and return 0
    return 1
end
complete -c merlya -n __merlya_wants_targets -f -a '(__merlya_inventory)'
complete -c merlya -l targets -x -a '(__merlya_inventory)'
"#;
