// Placeholder: the next-launch reporter lands here (issue 4).
