select coalesce(max(version), 0) from {migrations}
