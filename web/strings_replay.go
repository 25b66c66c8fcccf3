package web

import "github.com/ccmlab/ccmlab/internal/i18n"

// replayTexts are the player's texts (static/js/player.js): replaying a
// finished flow in the live page, and a recording in `ccmlab replay`. They
// live apart from pageTexts so the two catalogs can change independently.
var replayTexts = i18n.Catalog{
	"replay.bar":          {JA: "記録の再生", EN: "Recording playback"},
	"replay.mode":         {JA: "▶ 記録を再生中 — ラボは動いていません", EN: "▶ Playing a recording — no lab is running"},
	"replay.loading":      {JA: "記録を読み込み中…", EN: "Loading the recording…"},
	"replay.failed":       {JA: "記録を読み込めません: {msg}", EN: "Cannot load the recording: {msg}"},
	"replay.play":         {JA: "再生", EN: "Play"},
	"replay.pause":        {JA: "一時停止", EN: "Pause"},
	"replay.prev":         {JA: "1 つ戻る", EN: "Step back"},
	"replay.next":         {JA: "1 つ進む", EN: "Step forward"},
	"replay.first":        {JA: "最初へ", EN: "To the start"},
	"replay.speed":        {JA: "速度", EN: "Speed"},
	"replay.position":     {JA: "再生位置", EN: "Position"},
	"replay.at":           {JA: "{time} ({i} / {n})", EN: "{time} ({i} of {n})"},
	"replay.download":     {JA: "記録をダウンロード", EN: "Download the recording"},
	"replay.download.tip": {JA: "最近の変化を NDJSON で保存します。ccmlab replay ファイル名 で、ラボなしで再生できます", EN: "Saves the recent changes as NDJSON; ccmlab replay FILE plays them where no lab runs"},
	"replay.flow":         {JA: "再生", EN: "Replay"},
	"replay.flow.tip":     {JA: "記録された各ステップを選んだ速さでもう一度見せます。ラボには何もしません", EN: "Plays the recorded steps again at a chosen pace; the lab is not touched"},
	"replay.pace":         {JA: "間隔", EN: "Pace"},
	"replay.pace.s":       {JA: "1 ステップ {s} 秒", EN: "1 step per {s} s"},
	"replay.step":         {JA: "ステップ {i} / {n}", EN: "Step {i} of {n}"},
	"replay.live":         {JA: "ライブに戻る", EN: "Back to live"},
	"replay.flow.label":   {JA: "ステップの再生: {name}", EN: "Replay of the steps: {name}"},
}
