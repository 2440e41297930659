// Placeholder: the tracking store and uploader land here (issue 4).
