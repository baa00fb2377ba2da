-- Whether a host's proven reads run in a read-only mount namespace (issue 24 §7): 1 yes, 0 no, NULL unknown.
ALTER TABLE host_capabilities ADD COLUMN readonly_sandbox INTEGER;
