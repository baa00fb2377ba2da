fn main() {
    println!("cargo:rerun-if-changed=migrations");
    // Relative relocations packed (RELR): the loader reads a 17 KB table instead of a 1.47 MB one at
    // every start (ADR 0024, addendum). Needs binutils >= 2.38 and glibc >= 2.36.
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}
