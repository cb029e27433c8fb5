select version from {migrations}
