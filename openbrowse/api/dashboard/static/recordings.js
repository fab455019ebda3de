// An ended session's recordings (spec §22.1): the step links under each video seek it to where the step began.
for (const link of document.querySelectorAll(".recordings a[data-seek]")) {
  link.addEventListener("click", (event) => {
    const video = document.getElementById(link.dataset.video);
    if (!video) return;
    event.preventDefault();
    video.currentTime = Number(link.dataset.seek) || 0;
    video.play().catch(() => {}); // autoplay may be refused; the seek stands
  });
}

for (const video of document.querySelectorAll(".recordings video")) {
  const links = [...document.querySelectorAll(`.recordings a[data-video="${video.id}"]`)];
  video.addEventListener("timeupdate", () => {
    let current = null;
    for (const link of links) if (Number(link.dataset.seek) <= video.currentTime + 0.05) current = link;
    for (const link of links) link.toggleAttribute("aria-current", link === current);
  });
}
